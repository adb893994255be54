/**
 * A time chart of numeric metrics drawn by uPlot on a canvas. The parent owns the columns and calls
 * `draw` after changing them; drawing is put off to the next animation frame, so 50 events a second
 * cost one redraw a frame at most.
 */
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { showValue } from '../format.ts';
import { breakAtWords } from './name-breaks.tsx';

/** x (epoch seconds) first, then one column per metric, null where an event lacks it. */
export interface Columns {
  metrics: string[];
  x: number[];
  ys: (number | null)[][];
}

const COLOURS = ['#1f5fbf', '#c2410c', '#15803d', '#7e22ce', '#b91c1c', '#0e7490', '#a16207', '#4d7c0f'];

/** Points a series may have in view and still be drawn with a dot at each. */
const DOTTED_POINTS = 60;

/** The width a canvas text takes in CSS pixels, in the font uPlot gave an axis (its CSS font, scaled to the screen). */
function textWidth(plot: uPlot, axis: number, text: string): number {
  const font = plot.axes[axis]?.font as unknown as [string] | undefined;
  if (font) plot.ctx.font = font[0];
  return plot.ctx.measureText(text).width / uPlot.pxRatio;
}

/** The widest line of an axis' labels (a time label may have two: `12:00am` over the new day's date). */
const widestLabel = (plot: uPlot, axis: number, labels: string[] | null): number =>
  Math.max(
    0,
    ...(labels ?? []).flatMap((label) =>
      String(label)
        .split('\n')
        .map((line) => textWidth(plot, axis, line)),
    ),
  );

function fewPoints(plot: uPlot, series: number, first: number, last: number): boolean {
  const ys = plot.data[series] ?? [];
  let seen = 0;
  for (let i = first; i <= last; i++) if (ys[i] != null && ++seen > DOTTED_POINTS) return false;
  return true;
}

export interface ChartHandle {
  draw(): void;
}

export function Chart(props: {
  columns: Columns;
  handle: { current?: ChartHandle };
  height?: number;
  /** The time axis spans at least this range (epoch seconds), however few points there are. */
  span?: [number, number];
  /**
   * A live range: at each draw the span slides to end now, keeping its width, so that a range of the
   * last 5 minutes still shows 5 minutes, not all since the page was opened.
   */
  slide?: boolean;
}) {
  const box = useRef<HTMLDivElement>(null);
  const made = useRef<uPlot | undefined>(undefined);
  // Read when the chart is made and when its box resizes: a new height resizes the chart (below)
  // rather than making a new one, which would leave its box blank for a frame.
  const height = useRef(0);
  height.current = props.height ?? 320;
  const { columns } = props;
  const shape = columns.metrics.join('\u0000');
  useEffect(() => {
    const element = box.current;
    if (!element) return;
    const span = props.span;
    const slide = props.slide;
    // A metric keeps its colour whatever the range shows of the others: colours go by name order.
    const byName = [...columns.metrics].sort();
    // Declared before the plot, whose first cursor hook may run while it is made.
    let plot: uPlot | undefined;
    const showLatest = () => {
      const last = columns.x.length - 1;
      if (plot && last >= 0 && plot.cursor.idx == null) plot.setLegend({ idx: last }, false);
    };
    // Away from the cursor, a line without a value at the latest point shows its own latest value.
    const latestOf = (series: number): number | null => {
      const ys = columns.ys[series - 1] ?? [];
      for (let i = ys.length - 1; i >= 0; i--) if (ys[i] != null) return ys[i] as number;
      return null;
    };
    // The time labels are centred on their ticks, and the last tick may stand at the plot's right edge:
    // without an axis on the right, the plot leaves room there for half the widest time label (uPlot
    // leaves 25 pixels, which cut `12:00am`), measured each time the axis is laid out.
    let halfTimeLabel = 0;
    plot = new uPlot(
      {
        width: element.clientWidth || 800,
        height: height.current,
        padding: [
          null,
          (_plot: uPlot, _side: number, sides: boolean[]) =>
            sides[1] ? 0 : Math.max(25, Math.ceil(halfTimeLabel) + 2),
          null,
          null,
        ],
        series: [
          {},
          ...columns.metrics.map((label) => ({
            label,
            stroke: COLOURS[byName.indexOf(label) % COLOURS.length],
            width: 1.5,
            spanGaps: true,
            // Dots where a line has few points (a lone one draws no line), none where it is dense.
            points: { size: 5, show: fewPoints },
            // The legend shows values as the API gives them (docs/console.md), not rounded.
            value: (shown: uPlot, value: number | null, series: number) =>
              showValue(value ?? (shown.cursor.idx == null ? latestOf(series) : null)),
          })),
        ],
        // A short plot (a small dashboard widget) keeps labels on its y axis: uPlot's 30 pixels between
        // them leave one label, or none, on a plot under 100 pixels high; taller plots are as uPlot draws them.
        axes: [
          {
            size: (shown: uPlot, labels: string[] | null, axis: number) => {
              if (labels) halfTimeLabel = widestLabel(shown, axis, labels) / 2;
              return 50;
            },
          },
          { space: (_plot: uPlot, _axis: number, _min: number, _max: number, high: number) => (high < 100 ? 18 : 30) },
        ],
        scales: { x: { time: true } },
        // Away from the cursor the legend shows the latest point, rather than blanks.
        hooks: { setCursor: [() => showLatest()] },
      },
      [columns.x, ...columns.ys] as uPlot.AlignedData,
      element,
    );
    // Long names (`burner_modulation`) wrap at their words on a narrow legend, not inside one.
    for (const label of element.querySelectorAll('.u-legend .u-label')) breakAtWords(label);
    // uPlot spreads a single point over years: the axis is set to the span and the points beyond it.
    const fit = () => {
      if (!span) return;
      const now = Date.now() / 1000;
      const [start, end] = slide ? [now - (span[1] - span[0]), Math.max(now, span[1])] : span;
      const last = columns.x.length - 1;
      const from = Math.min(start, columns.x[0] ?? start);
      plot.setScale('x', { min: from, max: Math.max(end, columns.x[last] ?? end) });
    };
    fit();
    showLatest();
    let frame = 0;
    props.handle.current = {
      draw: () => {
        if (frame) return;
        frame = requestAnimationFrame(() => {
          frame = 0;
          plot.setData([columns.x, ...columns.ys] as uPlot.AlignedData);
          fit();
          showLatest();
        });
      },
    };
    const resize = new ResizeObserver(() => plot.setSize({ width: element.clientWidth, height: height.current }));
    resize.observe(element);
    made.current = plot;
    return () => {
      cancelAnimationFrame(frame);
      resize.disconnect();
      plot.destroy();
      made.current = undefined;
    };
    // A new chart for a new set of metrics or new columns; values that change only redraw.
  }, [shape, columns, props.span?.[0], props.span?.[1], props.slide]);
  useEffect(() => {
    const plot = made.current;
    const element = box.current;
    if (plot && element && plot.height !== height.current) {
      plot.setSize({ width: element.clientWidth, height: height.current });
    }
  }, [props.height]);
  return <div ref={box} class="chart" />;
}
