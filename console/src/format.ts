/** How values are shown: numbers as the API gives them, times in the user's zone. */

/** A metric's value as text: numbers unrounded (41.7 stays 41.7), objects as JSON. */
export function showValue(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

/** Epoch seconds (the API's default timestamp format) in the browser's time zone. */
export function showTime(seconds: number | string | null | undefined): string {
  if (seconds === null || seconds === undefined || seconds === '') return '';
  if (typeof seconds === 'string') return seconds;
  return dateTime.format(new Date(seconds * 1000));
}

/** An organisation's limit of events a second in words: its own, none, or the server's. */
export const showEventsLimit = (perSecond: number | null | undefined): string =>
  perSecond === null || perSecond === undefined ? "the server's" : perSecond === 0 ? 'none' : `${perSecond} a second`;

/** A count with its noun, singular for one: `1 point`, `2 points` (`many` for a plural not made with s). */
export const countOf = (count: number, one: string, many = `${one}s`): string => `${count} ${count === 1 ? one : many}`;
