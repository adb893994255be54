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
/** The chart's height before the box is measured. */
const UNMEASURED = 176;
/** The class of a legend without its time's line (style.css), in a widget too small for it all. */
const WITHOUT_TIME = 'legend-without-time';
/** The class of a legend that scrolls in its own box (style.css, which shows that it does). */
const SCROLLS = 'legend-scrolls';

export function useChartFit(box: { current: HTMLElement | null }, name: string, drawn: unknown): number {
  const [height, setHeight] = useState(UNMEASURED);
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
    if (!legend) return;
    // Measured whole: the time's line and the scroll box of an earlier fit are undone first.
    legend.classList.remove(WITHOUT_TIME, SCROLLS);
    legend.style.maxHeight = '';
    legend.style.overflowY = '';
    legend.removeAttribute('tabindex');
    legend.removeAttribute('aria-label');
    let chart = Math.floor(room - legend.scrollHeight);
    if (grows) chart = Math.max(chart, MIN_GROWING_CHART);
    else if (chart < MIN_CHART) {
      // Too small for the whole legend: its lines go to the series, which tell the lines apart, and
      // the time (the x axis's labels give it) makes way for them.
      legend.classList.add(WITHOUT_TIME);
      chart = Math.floor(room - legend.scrollHeight);
    }
    if (!grows && chart < MIN_CHART) {
      chart = MIN_CHART;
      const shown = [...legend.querySelectorAll('tr')].find((row) => row.offsetHeight > 0);
      const line = shown?.getBoundingClientRect().height || 20;
      legend.style.maxHeight = `${Math.max(line, Math.floor((room - MIN_CHART) / line) * line)}px`;
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
  }, [height, drawn]);
  return height;
}
