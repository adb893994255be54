export function RulesPage() {
  return (
    <section>
      <h1>Rules</h1>
    </section>
  );
}
