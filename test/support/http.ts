/**
 * A small HTTP client for tests. It can send a JSON body with GET (as the platform's clients do),
 * which fetch cannot.
 */
import { connect } from 'node:net';
import { type Dispatcher, request } from 'undici';

export interface ApiResponse<T = any> {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  body: T;
}

export interface RequestOptions {
  token?: string;
  body?: unknown;
  /** Raw body text, sent as is. */
  rawBody?: string | Buffer;
  query?: Record<string, string | number | boolean | string[]>;
  headers?: Record<string, string>;
  /** The connection pool to send through (one trusting a test's certificate authority, for HTTPS). */
  dispatcher?: Dispatcher;
}

export async function call<T = any>(
  baseUrl: string,
  method: string,
  path: string,
  options: RequestOptions = {},
): Promise<ApiResponse<T>> {
  const url = new URL(path, baseUrl);
  for (const [key, value] of Object.entries(options.query ?? {})) {
    for (const v of Array.isArray(value) ? value : [value]) url.searchParams.append(key, String(v));
  }
  const headers: Record<string, string> = { 'content-type': 'application/json', ...options.headers };
  // An empty value leaves the header out (some device SDKs send no Content-Type).
  for (const [name, value] of Object.entries(headers)) if (value === '') delete headers[name];
  if (options.token) headers['x-auth-token'] = options.token;
  const body = options.rawBody ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
  const response = await request(url, { method: method as 'GET', headers, body, dispatcher: options.dispatcher });
  const text = await response.body.text();
  let parsed: unknown = text;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    // not JSON: the text is the body
  }
  return { status: response.statusCode, headers: response.headers, text, body: parsed as T };
}

export interface RawResponse {
  status: number;
  headers: string;
  text: string;
  body: any;
}

/**
 * Sends bytes as they are over a new connection and reads the answer until the server closes it, for
 * requests no HTTP client would send (a malformed request line, oversized headers).
 */
export function rawRequest(baseUrl: string, bytes: string | Buffer, timeoutMs = 5000): Promise<RawResponse> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = connect(Number(port), hostname, () => socket.end(bytes));
    const timer = setTimeout(() => socket.destroy(new Error('no answer before the timeout')), timeoutMs);
    socket.on('data', (chunk) => chunks.push(chunk));
    // A server that answers and closes at once may reset the connection: what arrived is the answer.
    socket.on('error', (error) => {
      if (chunks.length === 0) reject(error);
    });
    socket.on('close', () => {
      clearTimeout(timer);
      const answer = Buffer.concat(chunks).toString('utf8');
      const [head = '', text = ''] = answer.split(/\r\n\r\n/, 2);
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // not JSON: the text is the body
      }
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0), headers: head, text, body });
    });
  });
}
