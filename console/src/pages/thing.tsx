export function ThingPage({ thingKey }: { thingKey: string }) {
  return (
    <section>
      <h1>{thingKey}</h1>
    </section>
  );
}
