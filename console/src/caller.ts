/**
 * What the signed-in caller's role allows (`GET /api/v3/caller`), read once per session and shared by
 * every page, so that a page offers only the controls that will be allowed. The server still checks
 * every request: a role changed meanwhile shows up as the API's refusal, and the next sign-in reads it
 * again.
 */
import { useEffect, useState } from 'preact/hooks';
import { answer, api } from './api/client.ts';
import type { paths } from './api/schema';
import { onSessionChange } from './session.ts';

export type Caller = paths['/api/v3/caller']['get']['responses'][200]['content']['application/json']['caller'];
export type Operation = 'read' | 'create' | 'update' | 'delete';

let pending: Promise<Caller> | undefined;
/** The caller once read: a component mounted after that knows it from its first render. */
let known: Caller | undefined;
onSessionChange(() => {
  pending = undefined;
  known = undefined;
});

/** The caller, read once per session (again after a failed read). */
export function loadCaller(): Promise<Caller> {
  if (!pending) {
    const asked = answer(api.GET('/api/v3/caller', {})).then((a) => {
      if (pending === asked) known = a.caller;
      return a.caller;
    });
    pending = asked;
    pending.catch(() => {
      pending = undefined;
    });
  }
  return pending;
}

export const allows = (caller: Caller | undefined, cls: string, operation: Operation): boolean =>
  caller?.allowed[cls]?.includes(operation) ?? false;

/**
 * Whether the caller's role may read `cls`: undefined until the role is known, so that a page neither
 * asks for what the role may not read nor says it may not before it knows (docs/console.md, "Pages").
 */
export const mayRead = (caller: Caller | undefined, cls: string): boolean | undefined =>
  caller === undefined ? undefined : allows(caller, cls, 'read');

/** The caller, or undefined until it is known (offer nothing meanwhile). */
export function useCaller(): Caller | undefined {
  const [caller, setCaller] = useState<Caller | undefined>(() => known);
  useEffect(() => {
    let current = true;
    loadCaller().then(
      (found) => current && setCaller(found),
      () => undefined,
    );
    return () => {
      current = false;
    };
  }, []);
  return caller;
}

/** Whether the caller's role grants `operation` on `cls`; false until known. */
export function useAllows(cls: string, operation: Operation): boolean {
  return allows(useCaller(), cls, operation);
}

/** `mayRead` of the signed-in caller: undefined until its role is known. */
export function useMayRead(cls: string): boolean | undefined {
  return mayRead(useCaller(), cls);
}
