/**
 * The marks of a chart's time axis, written as the console writes times elsewhere (docs/console.md,
 * "Pages", Things): in the browser's language and zone, `5:20 PM` and `Dec 3` rather than uPlot's own
 * `5:20pm` and `12/3/26` beside a legend and tables that say `5:32:42 PM` and `Dec 3, 2026`. A mark
 * says its day, on a second line, where the day changes from the mark before it (and on the first);
 * its year only where that is not this year, or on a month's marks where the year changes.
 */

const DAY = 86_400;
/** From this step between marks, marks are months. */
const MONTH = 28 * DAY;

interface Formats {
  second: Intl.DateTimeFormat;
  minute: Intl.DateTimeFormat;
  hour: Intl.DateTimeFormat;
  day: Intl.DateTimeFormat;
  dayOfYear: Intl.DateTimeFormat;
  month: Intl.DateTimeFormat;
  year: Intl.DateTimeFormat;
}

const formatsByLocale = new Map<string, Formats>();

function formatsOf(locale: string | undefined): Formats {
  const key = locale ?? '';
  let formats = formatsByLocale.get(key);
  if (!formats) {
    formats = {
      second: new Intl.DateTimeFormat(locale, { hour: 'numeric', minute: '2-digit', second: '2-digit' }),
      minute: new Intl.DateTimeFormat(locale, { hour: 'numeric', minute: '2-digit' }),
      hour: new Intl.DateTimeFormat(locale, { hour: 'numeric' }),
      day: new Intl.DateTimeFormat(locale, { month: 'short', day: 'numeric' }),
      dayOfYear: new Intl.DateTimeFormat(locale, { month: 'short', day: 'numeric', year: 'numeric' }),
      month: new Intl.DateTimeFormat(locale, { month: 'short' }),
      year: new Intl.DateTimeFormat(locale, { year: 'numeric' }),
    };
    formatsByLocale.set(key, formats);
  }
  return formats;
}

/**
 * The marks for `splits` (epoch seconds), `step` seconds apart. `now` says which year is this one;
 * `locale` is the browser's unless given (tests).
 */
export function timeMarks(splits: readonly number[], step: number, now = new Date(), locale?: string): string[] {
  const formats = formatsOf(locale);
  const thisYear = now.getFullYear();
  const dayOf = (at: Date) => (at.getFullYear() === thisYear ? formats.day : formats.dayOfYear).format(at);
  return splits.map((seconds, i) => {
    const at = new Date(seconds * 1000);
    const previous = i === 0 ? undefined : new Date((splits[i - 1] as number) * 1000);
    if (step >= 365 * DAY) return formats.year.format(at);
    if (step >= MONTH) {
      const month = formats.month.format(at);
      return previous?.getFullYear() === at.getFullYear() ? month : `${month}\n${formats.year.format(at)}`;
    }
    if (step >= DAY) return dayOf(at);
    const clock = step >= 3600 && step % 3600 === 0 ? formats.hour : step >= 60 ? formats.minute : formats.second;
    const time = clock.format(at);
    return previous?.toDateString() === at.toDateString() ? time : `${time}\n${dayOf(at)}`;
  });
}
