export function NotificationActionsPage() {
  return <h1>Notification actions</h1>;
}
