/**
 * The typed API client: openapi-fetch over the types generated from the server's OpenAPI document
 * (schema.d.ts, `npm run console:client`). Every call sends the session's token as X-Auth-Token; a 401
 * on a signed-in call ends the session, which brings the sign-in page back.
 */
import createClient from 'openapi-fetch';
import { currentSession, endSession } from '../session.ts';
import type { paths } from './schema';

export const api = createClient<paths>({ baseUrl: '', headers: { 'content-type': 'application/json' } });

api.use({
  onRequest({ request }) {
    const session = currentSession();
    if (session) request.headers.set('X-Auth-Token', session.token);
    return request;
  },
  onResponse({ request, response }) {
    // A refused sign-in (a wrong password, entering a child organisation) says nothing of this session.
    const signIn = new URL(request.url).pathname === '/api_sign_in';
    if (response.status === 401 && !signIn && currentSession()) endSession('Your session has ended: sign in again.');
    return response;
  },
});

/** An answer the API refused, with its message (the error body of docs/api.md, "Errors"). */
export class ApiFailure extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

interface Result<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/** The answer's data, or an ApiFailure carrying the API's own message. */
export async function answer<T>(call: Promise<Result<T>>): Promise<T> {
  const { data, error, response } = await call;
  if (data !== undefined && response.ok) return data;
  const message =
    error && typeof error === 'object' && 'message' in error && typeof error.message === 'string'
      ? error.message
      : `${response.status} ${response.statusText}`;
  throw new ApiFailure(message, response.status);
}

export const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/**
 * Whether the API refused the request for what it asked (a 4xx but 429: not found, not the caller's to
 * read, a bad key), as opposed to a server that failed, is busy or cannot be reached.
 */
export const isRefusal = (failure: unknown): boolean =>
  failure instanceof ApiFailure && failure.status < 500 && failure.status !== 429;
