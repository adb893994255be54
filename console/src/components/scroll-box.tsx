import type { ComponentChildren } from 'preact';

/**
 * A box whose content (a table that needs its columns side by side) scrolls sideways within it on a
 * narrow screen rather than widening the page; shadows at its edges show there is more (style.css,
 * `.table-scroll`). It is a region named `label` that the keyboard can focus, to scroll it with the arrows.
 */
export function ScrollBox(props: { label: string; children: ComponentChildren }) {
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must be reachable by keyboard.
    <section class="table-scroll" aria-label={props.label} tabIndex={0}>
      {props.children}
    </section>
  );
}
