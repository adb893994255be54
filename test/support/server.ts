/**
 * Starts a real Thingbase server on a loopback port against a fresh store, for API tests.
 */

import type { Dispatcher } from 'undici';
import { createServer, type Server } from '../../src/app.ts';
import { loadConfig } from '../../src/core/config.ts';
import { type ApiResponse, call, type RequestOptions } from './http.ts';
import type { StoreCase } from './stores.ts';

export const ADMIN_EMAIL = 'admin@example.com';
export const ADMIN_PASSWORD = 'correct horse battery';

export interface TestServer {
  url: string;
  server: Server;
  /** Settings of the store, to start another server on the same data. */
  storeSettings: { databaseUrl: string; databaseSchema?: string };
  request<T = any>(method: string, path: string, options?: RequestOptions): Promise<ApiResponse<T>>;
  /** Signs in and returns the token; throws unless the answer is 200. */
  signIn(email?: string, password?: string, organisationKey?: string): Promise<string>;
  adminToken(): Promise<string>;
  close(): Promise<void>;
}

export interface StartOptions {
  /** Environment for the server, or a function making it (to pick free ports per server). */
  env?: Record<string, string> | (() => Promise<Record<string, string>>);
  /** Reuse the store of an earlier server instead of a fresh one. */
  storeSettings?: { databaseUrl: string; databaseSchema?: string };
  /** Where requests go through: for HTTPS, a pool trusting the test's certificate authority. */
  dispatcher?: Dispatcher;
}

export async function startServer(store: StoreCase, options: StartOptions = {}): Promise<TestServer> {
  const storeSettings = options.storeSettings ?? store.fresh();
  const configure = async () =>
    loadConfig({
      HOST: '127.0.0.1',
      PORT: '0',
      MQTT_PORT: '0',
      LOG_LEVEL: 'error',
      THINGBASE_ADMIN_EMAIL: ADMIN_EMAIL,
      THINGBASE_ADMIN_PASSWORD: ADMIN_PASSWORD,
      THINGBASE_ORG_NAME: 'Acme',
      // Lower scrypt cost keeps the suite fast; the algorithm is the same.
      THINGBASE_PASSWORD_HASH_COST: '1024',
      // Every answer checked against its route's response schema (src/core/http/answers.ts).
      THINGBASE_CHECK_ANSWERS: 'true',
      // Many suites share two cores: a device write or a statement slowed by them is not the hung
      // database these bounds are for (the fault tests, test/api/fault-*.test.ts, run with the defaults).
      EVENT_WRITE_TIMEOUT_MS: '15000',
      DATABASE_STATEMENT_TIMEOUT_MS: '60000',
      // Suites make thousands of requests a minute; the rate limit's own tests set their limit.
      API_RATE_LIMIT: '1000000',
      // Suites run again with every event compacted as soon as it is stored (test/api/*-compacted.test.ts).
      ...(process.env.THINGBASE_TEST_COMPACT_EVENTS === 'true' ? { EVENT_COMPACTION_AGE: '0' } : {}),
      DATABASE_URL: storeSettings.databaseUrl,
      ...(storeSettings.databaseSchema ? { DATABASE_SCHEMA: storeSettings.databaseSchema } : {}),
      ...(typeof options.env === 'function' ? await options.env() : options.env),
    });
  let server: Server;
  for (let attempt = 1; ; attempt++) {
    try {
      server = await createServer(await configure());
      break;
    } catch (error) {
      // A port the environment function found free (freePort) can be taken by another suite's
      // server, running in parallel, before this one listens on it: pick again.
      const portTaken = /_PORT \d+ is taken/.test((error as Error).message);
      if (typeof options.env !== 'function' || !portTaken || attempt === 3) throw error;
    }
  }
  const address = await server.listen({ port: 0, host: '127.0.0.1' });
  let admin: string | undefined;
  const request = <T = any>(method: string, path: string, requestOptions?: RequestOptions) =>
    call<T>(address, method, path, { dispatcher: options.dispatcher, ...requestOptions });
  const signIn = async (email = ADMIN_EMAIL, password = ADMIN_PASSWORD, organisationKey?: string) => {
    const response = await request('POST', '/api_sign_in', {
      body: { email, password, ...(organisationKey ? { organisation_key: organisationKey } : {}) },
    });
    if (response.status !== 200) throw new Error(`sign-in of ${email} failed: ${response.status} ${response.text}`);
    return response.body.auth_token as string;
  };
  return {
    url: address,
    server,
    storeSettings,
    request,
    signIn,
    adminToken: async () => {
      admin ??= await signIn();
      return admin;
    },
    close: async () => {
      await server.close();
      if (!options.storeSettings) await store.dispose(storeSettings);
    },
  };
}
