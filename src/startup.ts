/**
 * Start-up plumbing shared by `thingbase serve` and the other commands: opening the configured store,
 * and start-up failures told as the setting to change (docs/configuration.md, "Starting").
 */
import { type Config, ConfigError } from './core/config.ts';
import { redactUrl } from './core/urls.ts';
import { engineOf, sqlitePath } from './store/dialect.ts';
import { openStore, type Store, StoreUnavailableError } from './store/store.ts';

export { redactUrl };

/** The password in a database address, if it has one, so that it can be kept out of messages. */
function passwordOf(url: string): string | undefined {
  try {
    const password = decodeURIComponent(new URL(url).password);
    return password === '' ? undefined : password;
  } catch {
    return undefined;
  }
}

/** Opens (and migrates) the store DATABASE_URL names; a store that cannot be reached says which setting to check. */
export async function openConfiguredStore(
  config: Config,
  onMigrated?: (names: string[]) => void,
  onConnectionError?: (error: Error) => void,
  onFault?: (message: string) => void,
): Promise<Store> {
  try {
    return await openStore({
      databaseUrl: config.databaseUrl,
      schema: config.databaseSchema,
      sqliteSynchronous: config.sqliteSynchronous,
      sqliteMaxBytes: config.sqliteMaxBytes,
      onMigrated,
      onConnectionError,
      connectTimeoutMs: config.databaseConnectTimeoutMs,
      onFault,
    });
  } catch (error) {
    if (!(error instanceof StoreUnavailableError)) throw error;
    throw storeUnavailable(config, error);
  }
}

function storeUnavailable(config: Config, error: StoreUnavailableError): ConfigError {
  const url = config.databaseUrl;
  const reason = reasonOf(url, error.cause);
  if (engineOf(url) === 'sqlite') {
    return new ConfigError(
      `cannot open the SQLite database ${sqlitePath(url)} (${reason}): set DATABASE_URL to sqlite:<path> of a file this process can create and write`,
    );
  }
  if (error.step === 'schema') {
    return new ConfigError(
      `cannot create or use the PostgreSQL schema ${config.databaseSchema} (${reason}): set DATABASE_SCHEMA to a schema the user of DATABASE_URL may create or use`,
    );
  }
  return databaseUnreachable(url, error.cause, 'DATABASE_URL');
}

/** Why a connection failed, without the password of `url`. */
function reasonOf(url: string, cause: Error): string {
  const password = passwordOf(url);
  const reason = cause.message || String((cause as NodeJS.ErrnoException).code ?? cause);
  return password ? reason.split(password).join('***') : reason;
}

/**
 * A PostgreSQL database at `url` that did not answer, in the words every command says it with, naming
 * the `setting` that gave the address (DATABASE_URL, or copy-store's --to); its password is not said.
 */
export function databaseUnreachable(url: string, cause: Error, setting: string): ConfigError {
  return new ConfigError(
    `cannot reach the database at ${redactUrl(url)} (${reasonOf(url, cause)}): check ${setting} (postgres://user:password@host:port/database) and that the database runs`,
  );
}

/**
 * Why the HTTP port could not be opened, naming the setting to change; other errors as they are.
 */
export function explainListenError(error: unknown, at: { port: number; host: string }): unknown {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'EADDRINUSE') return new ConfigError(`PORT ${at.port} is taken: set PORT to a free port`);
  if (code === 'EACCES') {
    return new ConfigError(
      `PORT ${at.port} may not be opened by this user (ports below 1024 need privileges): set PORT to a port above 1023`,
    );
  }
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
    return new ConfigError(
      `HOST ${at.host} is not an address of this machine: set HOST to one of its addresses (0.0.0.0 for all of them)`,
    );
  }
  return error;
}
