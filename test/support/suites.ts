/**
 * `describeOnStores` runs one API suite once per store, each with its own server and fresh data.
 */
import { after, before, describe } from 'node:test';
import { openStore, type Store } from '../../src/store/store.ts';
import { type StartOptions, startServer, type TestServer } from './server.ts';
import { STORES, type StoreCase } from './stores.ts';

export interface SuiteContext {
  store: StoreCase;
  /** The suite's server, started before its first test. */
  readonly api: TestServer;
}

export function describeOnStores(title: string, body: (ctx: SuiteContext) => void, options: StartOptions = {}): void {
  for (const store of STORES) {
    describe(`${title} [${store.name}]`, { skip: store.skip }, () => {
      let api: TestServer | undefined;
      const ctx: SuiteContext = {
        store,
        get api() {
          if (!api) throw new Error('the server is not started');
          return api;
        },
      };
      before(async () => {
        api = await startServer(store, options);
      });
      after(async () => {
        await api?.close();
      });
      body(ctx);
    });
  }
}

/**
 * A fresh store of this kind for the suite being declared, opened on first use (without a server) and
 * closed and removed after the suite.
 */
export function suiteStore(storeCase: StoreCase): () => Promise<Store> {
  const settings = storeCase.fresh();
  let store: Store | undefined;
  after(async () => {
    await store?.close();
    await storeCase.dispose(settings);
  });
  return async () => {
    store ??= await openStore({ databaseUrl: settings.databaseUrl, schema: settings.databaseSchema });
    return store;
  };
}
