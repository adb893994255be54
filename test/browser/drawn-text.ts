/**
 * How text is drawn in lines by the browser, for tests of where names wrap (components/name-breaks.tsx):
 * the lines each element's text is broken into, and the words a line's end cuts in two.
 */
import type { Page } from 'playwright-core';

/**
 * How the text of each element `selector` finds inside `within` (a selector too) is broken into lines
 * as drawn: its characters grouped by the line box each lies on.
 */
export function drawnLines(page: Page, within: string, selector: string): Promise<string[][]> {
  return page.evaluate(`(() => {
    const within = document.querySelector(${JSON.stringify(within)});
    return [...within.querySelectorAll(${JSON.stringify(selector)})].map((element) => {
      const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
      const lines = [];
      let line = '';
      let last = null;
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        for (let i = 0; i < node.length; i++) {
          const range = document.createRange();
          range.setStart(node, i);
          range.setEnd(node, i + 1);
          const rect = range.getClientRects()[0];
          if (rect && last !== null && rect.top > last + 2) {
            lines.push(line);
            line = '';
          }
          if (rect) last = rect.top;
          line += node.data[i];
        }
      }
      lines.push(line);
      return lines;
    });
  })()`);
}

/**
 * Words cut in two by a line's end: lines ending in a letter or digit and followed by one. A line
 * ending in `_` or `-` ends at a break point, not inside a word.
 */
export function cutWords(lines: string[][]): string[] {
  return lines.flatMap((parts) =>
    parts.slice(1).flatMap((next, i) => {
      const before = parts[i] ?? '';
      return /[\p{L}\p{N}]$/u.test(before) && /^[\p{L}\p{N}]/u.test(next) ? [parts.join(' | ')] : [];
    }),
  );
}
