import { ComingPage } from '../components/coming-page.tsx';

/** Gateways, their adapters and configuration. */
export function GatewaysPage() {
  return <ComingPage title="Gateways" />;
}
