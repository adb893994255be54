/**
 * The height of a time-series widget's chart, fitted to the widget: what its box leaves once uPlot's
 * legend (below the chart, its names wrapping) is drawn whole, so that the legend is never cut at the
 * widget's edge, whatever the widget's size, on a wide screen or a phone. When even the smallest chart
 * and the whole legend cannot fit (many lines in a small widget), the legend leaves out its time's line
 * first, so that what room there is shows the series (their colours and names); when it still cannot
 * fit, it scrolls in a box of its own, a whole number of lines high, which the keyboard reaches; and
 * when the smallest chart and one line of it are more than the widget's room, the widget scrolls.
 *
 * On a phone the widgets stack in one column and a widget's height is a minimum (style.css): there
 * the chart is fitted to the room the widget's height leaves, but never drawn below a readable height,
 * axes and all, and the legend is never scrolled: the widget grows to hold both.
 *
 * A widget under 3 rows (which the editor does not make, but the API and an import may) is too short
 * for that: there the chart leaves out its time axis (the dashboard's `Time range` says what it spans)
 * and caption, and its legend the time's line, so that 2 rows hold a plot with its y axes and a line
 * of legend (its series' values); and 1 row, whose title leaves room for no line of text, draws its
 * lines alone, without axes or legend, over the whole room. A widget that grows (on a phone) is drawn whole whatever its rows.
 *
 * The chart (components/chart.tsx) is resized to a new height, not made again. A legend whose values
 * change is measured again but only shrinks the chart, so a reading that wraps a line now and then
 * never resizes the chart back and forth.
 */
import { useEffect, useRef, useState } from 'preact/hooks';

/**
 * The smallest chart drawn, in pixels; below it, the legend scrolls instead. A plot of about 60 beside
 * its axes, enough for uPlot to label the y axis twice or more: a smaller one drew no y label at all.
 */
const MIN_CHART = 120;
/** The smallest chart drawn in a widget that grows (on a phone), in pixels: a plot of about 170 and its axes. */
const MIN_GROWING_CHART = 240;
/** The smallest chart drawn without its time axis (a widget of 2 rows): a plot with two y labels or more. */
const MIN_SHORT_CHART = 48;
/** What a chart leaves out in a widget of `rows` rows that does not grow (above). */
const leaveOutOf = (rows: number): 'time' | 'axes' | undefined => (rows < 2 ? 'axes' : rows < 3 ? 'time' : undefined);
/** The chart's height before the box is measured. */
const UNMEASURED = 176;
/** The class of a legend without its time's line (style.css), in a widget too small for it all. */
const WITHOUT_TIME = 'legend-without-time';
/** The class of a legend that scrolls in its own box (style.css, which shows that it does). */
const SCROLLS = 'legend-scrolls';

export function useChartFit(
  box: { current: HTMLElement | null },
  name: string,
  drawn: unknown,
  rows: number,
): { height: number; leaveOut: 'time' | 'axes' | undefined } {
  const [height, setHeight] = useState(UNMEASURED);
  // Taken as not growing until measured: most widgets do not.
  const [leaveOut, setLeaveOut] = useState(() => leaveOutOf(rows));
  const current = useRef(height);
  current.current = height;
  const state = useRef<{ room: number; width: number; legend: HTMLElement | null }>({
    room: -1,
    width: -1,
    legend: null,
  });
  const fit = useRef(() => {});
  fit.current = () => {
    const element = box.current;
    if (!element) return;
    const legend = element.querySelector<HTMLElement>('.u-legend');
    const fresh = legend !== state.current.legend;
    // A widget whose height is a minimum grows with what it holds: the room is what its box would
    // have at that height, less than the box itself while the widget is taller.
    const widget = element.closest<HTMLElement>('.widget');
    const least = widget ? Number.parseFloat(getComputedStyle(widget).minHeight) : Number.NaN;
    const grows = !!widget && least > 0;
    // The room the widget gives, not what an earlier fit made the box hold (below).
    element.style.minHeight = '';
    const room = element.clientHeight - (grows ? Math.max(0, widget.offsetHeight - least) : 0);
    const width = element.clientWidth;
    const resized = room !== state.current.room || width !== state.current.width;
    state.current = { room, width, legend };
    const short = grows ? undefined : leaveOutOf(rows);
    setLeaveOut(short);
    // Lines alone take the whole room.
    if (short === 'axes') {
      setHeight(Math.max(1, Math.floor(room)));
      return;
    }
    if (!legend) return;
    // Measured whole: the time's line and the scroll box of an earlier fit are undone first.
    legend.classList.remove(WITHOUT_TIME, SCROLLS);
    legend.style.maxHeight = '';
    legend.style.overflowY = '';
    legend.removeAttribute('tabindex');
    legend.removeAttribute('aria-label');
    // Without a time axis the plot needs every pixel: the time's line is left out from the start.
    if (short) legend.classList.add(WITHOUT_TIME);
    const smallest = short ? MIN_SHORT_CHART : MIN_CHART;
    let chart = Math.floor(room - legend.scrollHeight);
    if (grows) chart = Math.max(chart, MIN_GROWING_CHART);
    else if (chart < smallest) {
      // Too small for the whole legend: its lines go to the series, which tell the lines apart, and
      // the time (the x axis's labels give it) makes way for them.
      legend.classList.add(WITHOUT_TIME);
      chart = Math.floor(room - legend.scrollHeight);
    }
    if (!grows && chart < smallest) {
      chart = smallest;
      const shown = [...legend.querySelectorAll('tr')].find((row) => row.offsetHeight > 0);
      const line = shown?.getBoundingClientRect().height || 20;
      legend.style.maxHeight = `${Math.max(line, Math.floor((room - smallest) / line) * line)}px`;
      legend.style.overflowY = 'auto';
      legend.classList.add(SCROLLS);
      legend.tabIndex = 0;
      legend.setAttribute('aria-label', `Legend of ${name}`);
      // Even then the smallest chart and a line of legend may need more than the room (a widget being
      // edited gives its controls a part of it): the box is made to hold them, so that the caption
      // below follows them rather than lying over the legend, and the widget scrolls as a whole.
      const holds = chart + legend.offsetHeight;
      if (holds > room) element.style.minHeight = `${holds}px`;
    }
    // A legend that grew shrinks the chart at once; one that shrank leaves it until the next new chart.
    if ((fresh || resized || chart < current.current) && Math.abs(chart - current.current) >= 2) setHeight(chart);
  };
  // Sizes observed are fitted in the next frame: a fit changes the legend's box, which its observer
  // would otherwise report again within the same frame.
  const frame = useRef(0);
  const fitSoon = () => {
    frame.current ||= requestAnimationFrame(() => {
      frame.current = 0;
      fit.current();
    });
  };
  useEffect(() => {
    const element = box.current;
    if (!element) return;
    const observer = new ResizeObserver(fitSoon);
    observer.observe(element);
    return () => {
      observer.disconnect();
      cancelAnimationFrame(frame.current);
    };
  }, []);
  // A new chart (new columns) has a new legend, and a new height resizes it: measured once uPlot has
  // sized it (in the frame after), and watched as its values change.
  useEffect(() => {
    fitSoon();
    const legend = box.current?.querySelector<HTMLElement>('.u-legend');
    if (!legend) return;
    const observer = new ResizeObserver(fitSoon);
    observer.observe(legend);
    return () => observer.disconnect();
  }, [height, drawn, leaveOut]);
  return { height, leaveOut };
}
