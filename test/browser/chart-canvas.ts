/**
 * What a chart's canvas shows, read from its pixels in the browser: uPlot draws its axes' labels on
 * the canvas, where no locator reaches them.
 */
import type { Locator } from 'playwright-core';

/** What is read of the canvas (the tests' TypeScript has no DOM types). */
interface Canvas {
  width: number;
  height: number;
  parentElement: { querySelector(selector: string): { offsetTop: number; offsetHeight: number } } | null;
  getBoundingClientRect(): { width: number };
  getContext(kind: '2d'): {
    getImageData(
      x: number,
      y: number,
      width: number,
      height: number,
    ): { width: number; height: number; data: Uint8ClampedArray };
  } | null;
}

/**
 * What a chart's canvas holds in its x axis' band (below the plot): whether any label is drawn there,
 * and how many of its pixels touch the canvas' right edge (its last column of pixels), where a label cut
 * by the edge ends.
 */
export function inkAtRightEdge(canvas: Locator): Promise<{ labels: boolean; edge: number }> {
  return canvas.evaluate((element) => {
    const drawn = element as unknown as Canvas;
    const over = drawn.parentElement?.querySelector('.u-over');
    if (!over) return { labels: false, edge: 0 };
    const scale = drawn.width / drawn.getBoundingClientRect().width;
    const top = Math.ceil((over.offsetTop + over.offsetHeight) * scale) + 2;
    const band = drawn.getContext('2d')?.getImageData(0, top, drawn.width, drawn.height - top);
    if (!band) return { labels: false, edge: 0 };
    let labels = false;
    let edge = 0;
    for (let y = 0; y < band.height; y++) {
      for (let x = 0; x < band.width; x++) {
        if ((band.data[(y * band.width + x) * 4 + 3] as number) < 64) continue;
        labels = true;
        if (x === band.width - 1) edge++;
      }
    }
    return { labels, edge };
  });
}
