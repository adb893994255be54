import { ComingPage } from '../components/coming-page.tsx';

/** Notification actions of every kind, with their delivery attempts. */
export function NotificationActionsPage() {
  return <ComingPage title="Notification actions" />;
}
