export function KeyPairsPage() {
  return (
    <section>
      <h1>Key pairs</h1>
    </section>
  );
}
