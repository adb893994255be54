/**
 * A device client written from docs/devices.md alone: it signs each body with its key pair, as the edge
 * SDKs do, and can compress bodies with LZF.
 */
import { createHmac } from 'node:crypto';
import type { ApiResponse } from './http.ts';
import { call } from './http.ts';
import { compressLzf } from './lzf-compress.ts';
import type { TestServer } from './server.ts';

export interface KeyPair {
  key_pair_key: string;
  access_key: string;
  secret_key: string;
}

export const sign = (secret: string, body: string | Buffer): string =>
  createHmac('sha256', secret).update(body).digest('hex');

export async function createKeyPair(api: TestServer, token: string, body: object = {}): Promise<KeyPair> {
  const response = await api.request('POST', '/api/v3/key_pairs', {
    token,
    body: { key_pair: { name: 'device', ...body } },
  });
  if (response.status !== 200) throw new Error(response.text);
  return response.body.key_pair as KeyPair;
}

export interface DeviceSendOptions {
  /** Sign this instead of the body (to test refusals). */
  signature?: string;
  lzf?: boolean;
  contentType?: string | null;
  /** Raw body text, sent and signed as is. */
  raw?: string;
}

export class Device {
  constructor(
    private readonly baseUrl: string,
    readonly keyPair: KeyPair,
  ) {}

  post(path: string, payload: unknown, options: DeviceSendOptions = {}): Promise<ApiResponse> {
    return this.send('POST', path, payload, options);
  }

  put(path: string, payload: unknown, options: DeviceSendOptions = {}): Promise<ApiResponse> {
    return this.send('PUT', path, payload, options);
  }

  private send(method: string, path: string, payload: unknown, options: DeviceSendOptions): Promise<ApiResponse> {
    const text = options.raw ?? JSON.stringify(payload);
    const headers: Record<string, string> = {
      'x-access-key': this.keyPair.access_key,
      'x-dtn-signature': options.signature ?? sign(this.keyPair.secret_key, text),
    };
    let body: string | Buffer = text;
    if (options.lzf) {
      body = compressLzf(Buffer.from(text));
      headers['x-compressed'] = 'LZF';
    }
    headers['content-type'] = options.contentType === null ? '' : (options.contentType ?? 'application/json');
    return call(this.baseUrl, method, path, { rawBody: body, headers });
  }

  register(payload: object, options?: DeviceSendOptions) {
    return this.post('/api/v3/things/register.json', payload, options);
  }

  heartbeat(payload: object, options?: DeviceSendOptions) {
    return this.post('/api/v3/things/heartbeat.json', payload, options);
  }

  event(payload: object, options?: DeviceSendOptions) {
    return this.post('/api/v3/things/event.json', payload, options);
  }
}
