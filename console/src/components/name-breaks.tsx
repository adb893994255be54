/**
 * Names of metrics (`burner_modulation`, a nested `machine.temp`) and the chart lines named after them
 * are long words to a browser, which breaks them anywhere rather than widen a phone's page
 * (`overflow-wrap: anywhere`, style.css): `burner_modu` then `lation`. A line may break after each
 * `_`, and after a `.` before a letter, instead (a `<wbr>`, which copying leaves out); a part still
 * too long for its line breaks where it must.
 */
import { Fragment } from 'preact';

/** The name in pieces, each ending where a line may break. */
const parts = (name: string): string[] => name.split(/(?<=_)|(?<=\.)(?=\p{L})/u);

/** A name that wraps at its words. */
export function BreakableName({ name }: { name: string }) {
  return (
    <>
      {parts(name).map((part, i) => (
        <Fragment key={i}>
          {i > 0 && <wbr />}
          {part}
        </Fragment>
      ))}
    </>
  );
}

/** The same for an element drawn by a library (uPlot's legend labels): its text, given the same breaks. */
export function breakAtWords(element: Element): void {
  const pieces = parts(element.textContent ?? '');
  if (pieces.length > 1)
    element.replaceChildren(...pieces.flatMap((part, i) => (i > 0 ? [document.createElement('wbr'), part] : [part])));
}
