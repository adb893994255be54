/** How values are shown: numbers as the API gives them, times in the user's zone. */

/** A metric's value as text: numbers unrounded (41.7 stays 41.7), objects as JSON. */
export function showValue(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

/** Keys up to this long are never broken across lines (the server generates keys of 10 characters). */
const SHORT_KEY = 16;

/**
 * The class of a cell or `code` holding a key: `key` (never broken across lines, style.css) for one
 * short enough to be read and copied whole, as generated keys are; a long key of the user's may break.
 */
export const keyClass = (key: string): string | undefined => (key.length <= SHORT_KEY ? 'key' : undefined);

/** Epoch seconds (the API's default timestamp format) in the browser's time zone. */
export function showTime(seconds: number | string | null | undefined): string {
  if (seconds === null || seconds === undefined || seconds === '') return '';
  if (typeof seconds === 'string') return seconds;
  return dateTime.format(new Date(seconds * 1000));
}

const clock = new Intl.DateTimeFormat(undefined, { timeStyle: 'medium' });
const dayAndClock = new Intl.DateTimeFormat(undefined, {
  month: 'short',
  day: 'numeric',
  hour: 'numeric',
  minute: '2-digit',
});
const shortDateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'short', timeStyle: 'short' });

/**
 * Epoch seconds as short as says them, in the browser's zone and language, to keep to one line in a
 * narrow table: today's by its time (`6:25:00 PM`), this year's by day and minute (`Nov 29, 6:25 PM`),
 * older ones by short date and minute (`11/29/25, 6:25 PM`).
 */
export function showShortTime(seconds: number, now = new Date()): string {
  const at = new Date(seconds * 1000);
  if (at.toDateString() === now.toDateString()) return clock.format(at);
  return (at.getFullYear() === now.getFullYear() ? dayAndClock : shortDateTime).format(at);
}

/** An organisation's limit of events a second in words: its own, none, or the server's. */
export const showEventsLimit = (perSecond: number | null | undefined): string =>
  perSecond === null || perSecond === undefined ? "the server's" : perSecond === 0 ? 'none' : `${perSecond} a second`;

/** A count with its noun, singular for one: `1 point`, `2 points` (`many` for a plural not made with s). */
export const countOf = (count: number, one: string, many = `${one}s`): string => `${count} ${count === 1 ? one : many}`;

/** A span of whole seconds in the largest unit that divides it: `15 min`, `2 h`, `90 s`, `1 day`. */
export function showDuration(seconds: number): string {
  if (seconds > 0 && seconds % 86_400 === 0) return countOf(seconds / 86_400, 'day');
  if (seconds > 0 && seconds % 3600 === 0) return `${seconds / 3600} h`;
  if (seconds > 0 && seconds % 60 === 0) return `${seconds / 60} min`;
  return `${seconds} s`;
}

/**
 * Text longer than `longest` characters, cut to that many with an ellipsis as the last: a value of a
 * device's or an audit trail's that would take a page is shown in part (the API has it whole).
 */
export const cutText = (text: string, longest: number): string =>
  text.length > longest ? `${text.slice(0, longest - 1)}…` : text;

/** The seconds one bucket of a `time_grouping` and `time_grouping_value` covers (`minute`, 5: 300). */
export const groupingSeconds = (grouping: 'minute' | 'hour', every: number): number =>
  every * (grouping === 'hour' ? 3600 : 60);
