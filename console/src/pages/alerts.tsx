export function AlertsPage() {
  return (
    <section>
      <h1>Alerts</h1>
    </section>
  );
}
