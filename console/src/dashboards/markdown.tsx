import { micromark } from 'micromark';
import { useMemo } from 'preact/hooks';

/**
 * A text widget's Markdown. micromark escapes any HTML the text holds and drops links and images
 * whose protocol is not safe (`javascript:`), so what is inserted is micromark's own markup only,
 * never the author's HTML.
 */
export function Markdown({ text }: { text: string }) {
  const html = useMemo(() => micromark(text, { allowDangerousHtml: false, allowDangerousProtocol: false }), [text]);
  return <div class="markdown" dangerouslySetInnerHTML={{ __html: html }} />;
}
