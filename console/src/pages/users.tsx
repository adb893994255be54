export function UsersPage() {
  return (
    <section>
      <h1>Users</h1>
    </section>
  );
}
