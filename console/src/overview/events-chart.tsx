import { useEffect, useRef } from 'preact/hooks';
import { Chart, type ChartHandle, type Columns } from '../components/chart.tsx';

/** Events received per minute (epoch seconds, as GET /api/v3/fleet_summary answers by default). */
export function EventsChart({ minutes }: { minutes: { minute: number | string; events: number }[] }) {
  // One chart, its columns changed in place and redrawn, so that a live fleet costs a redraw, not a chart.
  const columns = useRef<Columns>({ metrics: ['Events'], x: [], ys: [[]] });
  const handle = useRef<ChartHandle | undefined>(undefined);
  columns.current.x = minutes.map((m) => Number(m.minute));
  columns.current.ys = [minutes.map((m) => m.events)];
  useEffect(() => handle.current?.draw(), [minutes]);
  return (
    <div
      role="img"
      aria-label={`Events received per minute, the last hour: ${minutes.reduce((s, m) => s + m.events, 0)} in all`}
    >
      <Chart columns={columns.current} handle={handle} height={200} counts />
    </div>
  );
}
