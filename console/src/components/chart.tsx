/**
 * A time chart of numeric metrics drawn by uPlot on a canvas. The parent owns the columns and calls
 * `draw` after changing them; drawing is put off to the next animation frame, so 50 events a second
 * cost one redraw a frame at most.
 */
import { useEffect, useMemo, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { showShortTime } from '../format.ts';
import { type Columns, labelOf, legendNumber, listOf, type Scale, scalesOf } from './chart-scales.ts';
import { breakAtWords } from './name-breaks.tsx';
import { timeMarks } from './time-marks.ts';

export type { Columns };

const COLOURS = ['#1f5fbf', '#c2410c', '#15803d', '#7e22ce', '#b91c1c', '#0e7490', '#a16207', '#4d7c0f'];

/** Points a series may have in view and still be drawn with a dot at each. */
const DOTTED_POINTS = 60;

/** The width a canvas text takes in CSS pixels, in the font uPlot gave an axis (its CSS font, scaled to the screen). */
function textWidth(plot: uPlot, axis: number, text: string): number {
  const font = plot.axes[axis]?.font as unknown as [string] | undefined;
  if (font) plot.ctx.font = font[0];
  return plot.ctx.measureText(text).width / uPlot.pxRatio;
}

/** The widest line of an axis' labels (a time label may have two: `12:00 AM` over the new day's date). */
const widestLabel = (plot: uPlot, axis: number, labels: string[] | null): number =>
  Math.max(
    0,
    ...(labels ?? []).flatMap((label) =>
      String(label)
        .split('\n')
        .map((line) => textWidth(plot, axis, line)),
    ),
  );

/** A legend's value, readably (`legendNumber`). */
const showLegendNumber = legendNumber();

/** A value in the legend: blank where a line has none. */
const showLegendValue = (value: number | null): string => (value == null ? '' : showLegendNumber(value));

/** A value shown with its unit, if it has one; a blank stays blank. */
const withUnit = (shown: string, unit: string | undefined): string =>
  shown !== '' && unit ? `${shown} ${unit}` : shown;

/** Keys of the scales, the first being uPlot's own `y`, so that a chart of one scale is as uPlot draws it. */
const scaleKey = (index: number) => (index === 0 ? 'y' : `y${index}`);

/** Labels on a y axis: uPlot's 30 pixels between them, 18 on a plot under 100 pixels high (below). */
const ySpace = (_plot: uPlot, _axis: number, _min: number, _max: number, high: number) => (high < 100 ? 18 : 30);

/**
 * A y axis as wide as its widest label needs (uPlot's 50 pixels cut `1,013.25`), its ticks and gap
 * included; 50 pixels at least on a chart of one axis, as uPlot draws it, while a chart of two gives
 * its plot what short labels leave (a phone's plot would otherwise be a third of the chart).
 */
const ySize = (least: number) => (plot: uPlot, labels: string[] | null, axis: number) =>
  Math.max(least, Math.ceil(widestLabel(plot, axis, labels) + 10 + 5 + 2));

/** The room for an axis' own label (its unit or names) across the axis: the bold 12-pixel text and a gap. */
const Y_LABEL = 20;

/** The steps between a count axis' marks: whole numbers, 1, 2 or 5 times a power of ten. */
const WHOLE_STEPS = Array.from({ length: 10 }, (_, power) => [1, 2, 5].map((step) => step * 10 ** power)).flat();

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
  /**
   * Each metric's unit, where it has one (a thing's template's): given, metrics of different units, or
   * of no unit and unlike values, are drawn on scales of their own (`scalesOf`); without it, on one.
   */
  units?: Record<string, string>;
  /**
   * What a chart too short for all of it leaves out (a dashboard's time series under 3 rows,
   * docs/console.md): `time`, its time axis (the range is said above it); `axes`, its axes and legend too.
   */
  leaveOut?: 'time' | 'axes';
  /** The values are whole counts (events a minute): the y axis marks whole numbers only, not 0.5. */
  counts?: boolean;
}) {
  const box = useRef<HTMLDivElement>(null);
  const made = useRef<uPlot | undefined>(undefined);
  // The time range the user dragged the chart to, kept as the clock moves on and when the chart is made
  // again for the same span's width (a dashboard reads its rolling range every minute), until a
  // double-click gives back the whole span.
  const zoom = useRef<{ width: number; slide: boolean; min: number; max: number } | undefined>(undefined);
  // Read when the chart is made and when its box resizes: a new height resizes the chart (below)
  // rather than making a new one, which would leave its box blank for a frame.
  const height = useRef(0);
  height.current = props.height ?? 320;
  const { columns } = props;
  const shape = columns.metrics.join('\u0000');
  const unitsKey = props.units && JSON.stringify(props.units);
  // The scales are chosen by the values the chart is made with; later ones stretch them, not move them.
  const scales = useMemo(
    () =>
      props.units
        ? scalesOf(columns, props.units)
        : [{ metrics: columns.metrics.map((_, i) => i), lo: 0, hi: 0, size: 0 }],
    [shape, columns, unitsKey],
  );
  useEffect(() => {
    const element = box.current;
    if (!element) return;
    const span = props.span;
    const slide = props.slide;
    const leaveOut = props.leaveOut;
    const units = props.units ?? {};
    const width = span ? span[1] - span[0] : 0;
    if (zoom.current && (zoom.current.width !== width || zoom.current.slide !== !!slide)) zoom.current = undefined;
    // A metric keeps its colour whatever the range shows of the others: colours go by name order.
    const byName = [...columns.metrics].sort();
    // A chart of one scale is labelled only with a unit; one of two names what each axis measures.
    const axisLabel = (scale: Scale) => (scale.unit || scales.length > 1 ? labelOf(scale, columns.metrics) : undefined);
    // The marks each y axis was last laid out with, as written beside its ticks; the time axis' too.
    const marks: string[][] = [];
    let timeMarksDrawn: string[] | undefined;
    // The scales as drawn, for tests (uPlot draws its axes on the canvas): each with its metrics, its
    // axis (left, right or none), label and marks, and the values it spans.
    const describeScales = (drawn: uPlot) => {
      const described = scales.map((scale, i) => ({
        metrics: scale.metrics.map((m) => columns.metrics[m]),
        axis: ['left', 'right'][i] ?? 'none',
        label: i < 2 ? axisLabel(scale) : undefined,
        marks: marks[i],
        min: drawn.scales[scaleKey(i)]?.min,
        max: drawn.scales[scaleKey(i)]?.max,
      }));
      const text = JSON.stringify(described);
      if (element.dataset.scales !== text) element.dataset.scales = text;
      // And the time axis' span, which a live range slides, and its marks.
      const time = JSON.stringify({ min: drawn.scales.x?.min, max: drawn.scales.x?.max, marks: timeMarksDrawn });
      if (element.dataset.x !== time) element.dataset.x = time;
    };
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
    // leaves 25 pixels, which cut `12:00 AM`), measured each time the axis is laid out; none without them.
    let halfTimeLabel = 0;
    plot = new uPlot(
      {
        width: element.clientWidth || 800,
        height: height.current,
        padding: [
          null,
          (_plot: uPlot, _side: number, sides: boolean[]) =>
            sides[1] || leaveOut ? 0 : Math.max(25, Math.ceil(halfTimeLabel) + 2),
          null,
          null,
        ],
        series: [
          // The legend's time as the console writes times elsewhere (`2:05:03 PM`, `Nov 29, 6:25 PM`),
          // not uPlot's own `2026-11-29 6:25pm`.
          { value: (_shown: uPlot, seconds: number | null) => (seconds == null ? '' : showShortTime(seconds)) },
          ...columns.metrics.map((label, i) => ({
            label,
            scale: scaleKey(scales.findIndex((scale) => scale.metrics.includes(i))),
            stroke: COLOURS[byName.indexOf(label) % COLOURS.length],
            width: 1.5,
            spanGaps: true,
            // Dots where a line has few points (a lone one draws no line), none where it is dense.
            points: { size: 5, show: fewPoints },
            // The legend shows values readably (docs/console.md), not with an answer's float noise, and
            // with their unit, as the value widget and the axes give it.
            value: (shown: uPlot, value: number | null, series: number) =>
              withUnit(showLegendValue(value ?? (shown.cursor.idx == null ? latestOf(series) : null)), units[label]),
          })),
        ],
        // A short plot (a small dashboard widget) keeps labels on its y axis: uPlot's 30 pixels between
        // them leave one label, or none, on a plot under 100 pixels high; taller plots are as uPlot draws them.
        legend: { show: leaveOut !== 'axes' },
        axes: [
          {
            show: !leaveOut,
            // Times as the legend and the console's tables write them (`5:20 PM`, `Dec 3`), not uPlot's `5:20pm`.
            values: (_shown: uPlot, splits: number[], _axis: number, _space: number, step: number) =>
              timeMarks(splits, step),
            size: (shown: uPlot, labels: string[] | null, axis: number) => {
              if (labels) {
                halfTimeLabel = widestLabel(shown, axis, labels) / 2;
                timeMarksDrawn = labels;
              }
              return 50;
            },
          },
          ...scales.slice(0, 2).map((scale, i) => ({
            scale: scaleKey(i),
            show: leaveOut !== 'axes',
            space: ySpace,
            size: (shown: uPlot, labels: string[] | null, axis: number) => {
              if (labels) marks[i] = labels;
              return ySize(scales.length > 1 ? 30 : 50)(shown, labels, axis);
            },
            ...(axisLabel(scale) ? { label: axisLabel(scale), labelSize: Y_LABEL } : {}),
            ...(props.counts ? { incrs: WHOLE_STEPS } : {}),
            ...(i === 1 ? { side: 1, grid: { show: false } } : {}),
          })),
        ],
        scales: { x: { time: true } },
        // Away from the cursor the legend shows the latest point, rather than blanks. A drag over the
        // plot selects the time range uPlot then zooms to: it is kept (`zoom`).
        hooks: {
          setCursor: [() => showLatest()],
          draw: [(drawn: uPlot) => describeScales(drawn)],
          setSelect: [
            (selected: uPlot) => {
              const { left, width: wide } = selected.select;
              if (wide <= 0) return;
              const min = selected.posToVal(left, 'x');
              const max = selected.posToVal(left + wide, 'x');
              if (max > min) zoom.current = { width, slide: !!slide, min, max };
            },
          ],
        },
      },
      [columns.x, ...columns.ys] as uPlot.AlignedData,
      element,
    );
    // Long names (`burner_modulation`) wrap at their words on a narrow legend, not inside one.
    for (const label of element.querySelectorAll('.u-legend .u-label')) breakAtWords(label);
    // uPlot spreads a single point over years: the axis is set to the span and the points beyond it; a
    // live range keeps its width, the points before its start left out.
    const fit = () => {
      if (zoom.current) {
        plot.setScale('x', { min: zoom.current.min, max: zoom.current.max });
        return;
      }
      if (!span) return;
      const now = Date.now() / 1000;
      const [start, end] = slide ? [now - (span[1] - span[0]), Math.max(now, span[1])] : span;
      const last = columns.x.length - 1;
      const from = slide ? start : Math.min(start, columns.x[0] ?? start);
      plot.setScale('x', { min: from, max: Math.max(end, columns.x[last] ?? end) });
    };
    fit();
    showLatest();
    // uPlot's double-click fits the axis to the points; the chart's span is given back instead.
    const unzoom = () => {
      zoom.current = undefined;
      fit();
    };
    plot.over.addEventListener('dblclick', unzoom);
    // Drawn without axes or legend (a dashboard's time series of one row), the chart is summed up for
    // assistive technology as an image naming each line and its latest value.
    const summarise = () => {
      if (leaveOut !== 'axes') return;
      const latest = columns.metrics.map((metric, i) => {
        const value = latestOf(i + 1);
        const unit = units[metric];
        return value == null ? `${metric}, no value` : `${metric} ${withUnit(showLegendValue(value), unit)}`;
      });
      element.setAttribute('role', 'img');
      element.setAttribute('aria-label', `Latest values: ${latest.join('; ')}`);
    };
    summarise();
    // A live range slides with the clock too, when no event comes: a step of a 200th of its width (a
    // pixel or two), every 5 seconds at least, so the last 5 minutes move every 5 seconds, the hour every
    // 18; not while the user has zoomed in.
    const slideOn = () => zoom.current || fit();
    const tick = span && slide ? setInterval(slideOn, Math.max(5, (span[1] - span[0]) / 200) * 1000) : undefined;
    let frame = 0;
    props.handle.current = {
      draw: () => {
        if (frame) return;
        frame = requestAnimationFrame(() => {
          frame = 0;
          plot.setData([columns.x, ...columns.ys] as uPlot.AlignedData);
          fit();
          showLatest();
          summarise();
        });
      },
    };
    const resize = new ResizeObserver(() => plot.setSize({ width: element.clientWidth, height: height.current }));
    resize.observe(element);
    made.current = plot;
    return () => {
      clearInterval(tick);
      plot.over.removeEventListener('dblclick', unzoom);
      element.removeAttribute('role');
      element.removeAttribute('aria-label');
      cancelAnimationFrame(frame);
      resize.disconnect();
      plot.destroy();
      made.current = undefined;
    };
    // A new chart for a new set of metrics or new columns; values that change only redraw.
  }, [scales, props.span?.[0], props.span?.[1], props.slide, props.leaveOut]);
  useEffect(() => {
    const plot = made.current;
    const element = box.current;
    if (plot && element && plot.height !== height.current) {
      plot.setSize({ width: element.clientWidth, height: height.current });
    }
  }, [props.height]);
  const unaxed = scales.slice(2).flatMap((scale) => scale.metrics.map((i) => columns.metrics[i] as string));
  return (
    <>
      <div ref={box} class="chart" />
      {unaxed.length > 0 && !props.leaveOut && (
        // Styled as the caption under a chart (style.css's .chart-caption), which tests find as the only one.
        <p class="chart-note" style={{ color: '#5b6473', fontSize: '0.9em' }}>
          {listOf(unaxed)} {unaxed.length > 1 ? 'are' : 'is'} drawn to a scale of {unaxed.length > 1 ? 'their' : 'its'}{' '}
          own, with no axis: the legend gives {unaxed.length > 1 ? 'their' : 'its'} values.
        </p>
      )}
    </>
  );
}
