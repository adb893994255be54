export function GroupsPage() {
  return <h1>Groups</h1>;
}
