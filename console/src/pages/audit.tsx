export function AuditPage() {
  return (
    <section>
      <h1>Audit trail</h1>
    </section>
  );
}
