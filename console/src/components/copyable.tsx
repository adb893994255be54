import { useRef, useState } from 'preact/hooks';

/**
 * Copies `text` to the clipboard; answers whether it was copied. Without the asynchronous clipboard
 * (not a secure context: plain HTTP at a LAN address), or when it refuses, the text shown is selected
 * and copied as a selection; if that is refused too, it stays selected for the user to copy.
 */
async function copyText(text: string, shown: HTMLElement | null): Promise<boolean> {
  try {
    if (navigator.clipboard) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch {
    // refused: the selection is tried next
  }
  const selection = getSelection();
  if (!shown || !selection) return false;
  const range = document.createRange();
  range.selectNodeContents(shown);
  selection.removeAllRanges();
  selection.addRange(range);
  try {
    return document.execCommand('copy');
  } catch {
    return false;
  }
}

export function Copyable(props: { label: string; text: string; hint?: string }) {
  const [copied, setCopied] = useState<boolean | undefined>();
  const shown = useRef<HTMLPreElement>(null);
  const copy = async () => setCopied(await copyText(props.text, shown.current));
  return (
    <figure>
      <figcaption>
        {props.label}
        {props.hint ? <small> ({props.hint})</small> : null}
      </figcaption>
      <pre ref={shown} class="wrapped">
        {props.text}
      </pre>
      <button type="button" onClick={copy}>
        {copied ? 'Copied' : `Copy ${props.label.charAt(0).toLowerCase()}${props.label.slice(1)}`}
      </button>
      {copied === false && (
        <p role="alert" class="error">
          Not copied: the browser refused. The text is selected: copy it with Ctrl+C (⌘C on a Mac).
        </p>
      )}
    </figure>
  );
}
