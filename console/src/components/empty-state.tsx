import type { ComponentChildren } from 'preact';

/** What an empty list holds, and the next step (a button or link to make the first one). */
export function EmptyState(props: { title: string; children: ComponentChildren; action?: ComponentChildren }) {
  return (
    <div class="empty-state">
      <h2>{props.title}</h2>
      <p>{props.children}</p>
      {props.action && <div class="actions">{props.action}</div>}
    </div>
  );
}
