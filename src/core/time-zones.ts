/**
 * Rails-style (ActiveSupport) time zone names and the IANA zones they stand for.
 * Clients of the platform send these names (`Mumbai`, `Eastern Time (US & Canada)`).
 */
export const RAILS_TIME_ZONES: Readonly<Record<string, string>> = {
  UTC: 'Etc/UTC',
  Mumbai: 'Asia/Kolkata',
  Kolkata: 'Asia/Kolkata',
  Chennai: 'Asia/Kolkata',
  'New Delhi': 'Asia/Kolkata',
  'Eastern Time (US & Canada)': 'America/New_York',
};
