import { ComingPage } from '../components/coming-page.tsx';

/** Thing templates and their metrics. */
export function TemplatesPage() {
  return <ComingPage title="Templates" />;
}
