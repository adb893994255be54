/** A section whose page is not built yet: the navigation already leads to it. */
export function ComingPage({ title }: { title: string }) {
  return (
    <section>
      <h1>{title}</h1>
      <p>This page is coming. Meanwhile the API does all of it (see /docs).</p>
    </section>
  );
}
