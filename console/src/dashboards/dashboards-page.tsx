import { ComingPage } from '../components/coming-page.tsx';

/** Dashboards of several things' telemetry. */
export function DashboardsPage() {
  return <ComingPage title="Dashboards" />;
}
