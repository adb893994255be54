import { ComingPage } from '../components/coming-page.tsx';

/** Groups of things, static or by expression. */
export function GroupsPage() {
  return <ComingPage title="Groups" />;
}
