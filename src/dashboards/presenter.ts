import type { TimeFormatter } from '../core/time.ts';
import type { DashboardRow } from '../store/tables.ts';
import type { Variable, Widget } from './widgets.ts';

export type TimeRange = { last: string } | { from: number; to: number };

export function presentDashboard(row: DashboardRow, time: TimeFormatter) {
  return {
    dashboard_key: row.dashboard_key,
    name: row.name,
    description: row.description,
    time_range: JSON.parse(row.time_range) as TimeRange,
    variables: JSON.parse(row.variables) as Variable[],
    widgets: JSON.parse(row.widgets) as Widget[],
    created_at: time(row.created_at),
    updated_at: time(row.updated_at),
  };
}
