/**
 * Rule definitions are cached by the rule engine; whatever changes a rule or one of its notification
 * actions says so here, and the engine drops that organisation's cached rules. Other server instances
 * notice the change within the engine's refresh interval (docs/rules.md).
 */
type Listener = (organisationKey: string) => void;

const listeners = new Set<Listener>();

export function onRulesChanged(listener: Listener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

export function rulesChanged(organisationKey: string): void {
  for (const listener of listeners) listener(organisationKey);
}
