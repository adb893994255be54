/**
 * A time chart of numeric metrics drawn by uPlot on a canvas. The parent owns the columns and calls
 * `draw` after changing them; drawing is put off to the next animation frame, so 50 events a second
 * cost one redraw a frame at most.
 */
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { showValue } from '../format.ts';

/** x (epoch seconds) first, then one column per metric, null where an event lacks it. */
export interface Columns {
  metrics: string[];
  x: number[];
  ys: (number | null)[][];
}

const COLOURS = ['#1f5fbf', '#c2410c', '#15803d', '#7e22ce', '#b91c1c', '#0e7490', '#a16207', '#4d7c0f'];

export interface ChartHandle {
  draw(): void;
}

export function Chart(props: {
  columns: Columns;
  handle: { current?: ChartHandle };
  height?: number;
  /** The time axis spans at least this range (epoch seconds), however few points there are. */
  span?: [number, number];
}) {
  const box = useRef<HTMLDivElement>(null);
  const { columns } = props;
  const shape = columns.metrics.join('\u0000');
  useEffect(() => {
    const element = box.current;
    if (!element) return;
    const [span0, span1] = props.span ?? [0, 0];
    const plot = new uPlot(
      {
        width: element.clientWidth || 800,
        height: props.height ?? 320,
        series: [
          {},
          ...columns.metrics.map((label, i) => ({
            label,
            stroke: COLOURS[i % COLOURS.length],
            width: 1.5,
            spanGaps: true,
            points: { show: false },
            // The legend shows values as the API gives them (docs/console.md), not rounded.
            value: (_plot: uPlot, value: number | null) => showValue(value),
          })),
        ],
        axes: [{}, {}],
        scales: {
          x: props.span
            ? {
                time: true,
                range: (_plot: uPlot, min: number | null, max: number | null): uPlot.Range.MinMax => [
                  Math.min(span0, min ?? span0),
                  Math.max(span1, max ?? span1),
                ],
              }
            : { time: true },
        },
      },
      [columns.x, ...columns.ys] as uPlot.AlignedData,
      element,
    );
    let frame = 0;
    props.handle.current = {
      draw: () => {
        if (frame) return;
        frame = requestAnimationFrame(() => {
          frame = 0;
          plot.setData([columns.x, ...columns.ys] as uPlot.AlignedData);
        });
      },
    };
    const resize = new ResizeObserver(() => plot.setSize({ width: element.clientWidth, height: props.height ?? 320 }));
    resize.observe(element);
    return () => {
      cancelAnimationFrame(frame);
      resize.disconnect();
      plot.destroy();
    };
    // A new chart for a new set of metrics or new columns; values that change only redraw.
  }, [shape, columns, props.span?.[0], props.span?.[1]]);
  return <div ref={box} class="chart" />;
}
