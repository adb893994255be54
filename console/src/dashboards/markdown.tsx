import { micromark } from 'micromark';
import { useMemo } from 'preact/hooks';

/**
 * A text widget's Markdown. micromark escapes any HTML the text holds and drops links and images
 * whose protocol is not safe (`javascript:`), so what is inserted is micromark's own markup only,
 * never the author's HTML.
 */
export function Markdown({ text }: { text: string }) {
  const html = useMemo(
    () => belowWidgetTitle(micromark(text, { allowDangerousHtml: false, allowDangerousProtocol: false })),
    [text],
  );
  return <div class="markdown" dangerouslySetInnerHTML={{ __html: html }} />;
}

/**
 * The text's headings two levels down: a widget's title is the page's second level, so `#` is a third
 * level heading inside it and the dashboard keeps one first-level heading, its name. Only micromark's
 * own tags are matched: the author's `<h1>` reaches the markup escaped.
 */
const belowWidgetTitle = (html: string): string =>
  html.replace(/<(\/?)h([1-6])>/g, (_, close: string, level: string) => `<${close}h${Math.min(6, Number(level) + 2)}>`);
