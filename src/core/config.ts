/**
 * Configuration, read once from the environment.
 * Every setting the server understands is named here and documented in docs/configuration.md.
 */

import { fileURLToPath } from 'node:url';
import type { LogFormat } from './log-format.ts';
import { openFileLimit, RESERVED_FILES } from './open-files.ts';

export interface Config {
  port: number;
  host: string;
  databaseUrl: string;
  /** SQLite flushes every commit to disk (FULL) or leaves power-cut safety to the OS (NORMAL). */
  sqliteSynchronous: 'FULL' | 'NORMAL';
  /** The most bytes the SQLite file may hold (SQLITE_MAX_SIZE_MB); undefined: no limit but the disk's. */
  sqliteMaxBytes: number | undefined;
  /** PostgreSQL schema to use (search_path); tests give each run its own. */
  databaseSchema: string | undefined;
  adminEmail: string | undefined;
  adminPassword: string | undefined;
  orgName: string;
  /** undefined = default 1883 when free; 0 = off. */
  mqttPort: number;
  /** Whether MQTT_PORT was set explicitly (a taken port is then fatal). */
  mqttPortExplicit: boolean;
  mqttUrl: string | undefined;
  /** The keep-alive interval of the connection to the external broker (MQTT_URL), seconds. */
  mqttKeepaliveSeconds: number;
  /** TLS certificate and key (PEM files): HTTPS on PORT and MQTTS on MQTTS_PORT (core/tls.ts). */
  tls: { certFile: string; keyFile: string } | undefined;
  /** Port of the embedded broker's MQTTS listener, with TLS; 0 = off. */
  mqttsPort: number;
  /** Whether MQTTS_PORT was set explicitly (a taken port is then fatal). */
  mqttsPortExplicit: boolean;
  /** Shared-subscription group on the external broker: one per deployment. */
  mqttShareGroup: string;
  /** Device connections the embedded broker holds at most; more are refused with CONNACK 3. */
  /** Client sockets, HTTP and MQTT together, the process holds at most (core/sockets.ts). */
  socketBudget: number;
  mqttMaxConnections: number;
  /** HTTP connections held at most; more are closed at once. */
  httpMaxConnections: number;
  /** Realtime connections (WebSockets and streams) one user may hold on this instance (realtime/connection-limits.ts). */
  realtimeMaxConnectionsPerUser: number;
  /** Realtime connections one organisation may hold on this instance. */
  realtimeMaxConnectionsPerOrganisation: number;
  /** How long a new connection has to send its first HTTP request or its MQTT CONNECT, ms. */
  connectTimeoutMs: number;
  /** How long an HTTP request, its body included, may take to arrive, ms. */
  requestTimeoutMs: number;
  /** Device messages that may wait for the server thread at once; past it messages are answered 503 at once. */
  mqttMaxPending: number;
  /** How long a device message taken should wait for its answer while the server cannot keep up, ms (mqtt/inbound-flow.ts). */
  mqttMaxWaitMs: number;
  /** Bytes of unfinished packets the device endpoint holds, all connections together (mqtt/endpoint/packet-parser.ts). */
  mqttMaxPartialBytes: number;
  /** Device endpoint sessions kept between connections, at most (mqtt/endpoint/sessions.ts). */
  mqttMaxSessions: number;
  /** Messages a kept session holds at most, in flight and queued. */
  mqttSessionMaxMessages: number;
  /** The longest a session is kept after its connection closes, ms (MQTT 3.1.1's kept sessions: this long). */
  mqttSessionExpiryMs: number;
  /** Events (and heartbeats) that may wait to be stored; past it new ones are refused with 503. */
  eventMaxPending: number;
  /** Whether a busy event writer's queue is shared fairly (events/fair-share.ts); off: first come, first served. */
  eventFairShare: boolean;
  /** Events a second each organisation may send, unless it has a value of its own; 0 = no limit. */
  eventsPerSecondPerOrganisation: number;
  /** Events a second each key pair may send; 0 = no limit. */
  eventsPerSecondPerKeyPair: number;
  /** The least time between the starts of two event transactions (ms): events/writer.ts, startSpacingMs. */
  eventWriteSpacingMs: number;
  /** How long a device write may wait for its events to commit before it is refused with 503 (ms). */
  eventWriteTimeoutMs: number;
  /** How long PostgreSQL may take to give a connection, new or from the pool (ms). */
  databaseConnectTimeoutMs: number;
  /** How long a statement made for a request may wait for PostgreSQL's answer (ms; 0: no bound). */
  databaseStatementTimeoutMs: number;
  smtpUrl: string | undefined;
  /** Sender address of e-mail actions. */
  smtpFrom: string | undefined;
  smsUrl: string | undefined;
  idpConfigPath: string | undefined;
  logLevel: string;
  /** LOG_FORMAT: `json` or `pretty`; unset = readable lines on a terminal, JSON elsewhere. */
  logFormat: LogFormat | undefined;
  /** Log a line for every answered request (LOG_REQUESTS). */
  logRequests: boolean;
  /** Behind a reverse proxy: client addresses come from X-Forwarded-For. */
  trustProxy: boolean;
  tokenIdleTtlSeconds: number;
  tokenMaxTtlSeconds: number;
  allowPrivateWebhooks: boolean;
  /** Checks every answer against its route's response schema (the test suite sets it; costs time). */
  checkAnswers: boolean;
  /** When set, `GET /metrics` needs `Authorization: Bearer <it>`. */
  metricsToken: string | undefined;
  /** Base address used in URLs the server hands out (property-setting actions); default http://HOST:PORT. */
  publicBaseUrl: string;
  /** Key that seals key pair secrets at rest; without it one is generated and kept in the store. */
  secretKey: string | undefined;
  /** scrypt cost parameter N; lower values only make sense in tests. */
  passwordHashCost: number;
  /** Notification deliveries: how long one attempt may take (ms). */
  deliveryTimeoutMs: number;
  /** How often expired events and rollups are deleted (ms); 0: never (docs/storage.md). */
  retentionSweepMs: number;
  /** Events older than this (ms, by event time) are compacted into blocks; 0: at once (docs/storage.md). */
  eventCompactionAgeMs: number;
  /** How often the compactor runs (ms); 0: never. */
  eventCompactionMs: number;
  /** Delay before the first retry (ms); it doubles with each further attempt, up to an hour. */
  deliveryRetryBaseMs: number;
  /** Attempts before a delivery is given up as failed. */
  deliveryMaxAttempts: number;
  /** How often no_data rules look for things whose silence is due (ms). */
  noDataCheckMs: number;
  /**
   * On heaps of 2 GB or more, how far the V8 heap grows between full collections, in percent of the
   * live size; 0 = V8's own (core/heap.ts).
   */
  heapGrowingPercent: number;
  /** Folder of the built console (docs/console.md); default console/dist of this installation. */
  consoleDir: string;
  /** User API requests each organisation may make a minute (API_RATE_LIMIT). */
  apiRateLimit: number;
  /** Map tiles for the console's map widgets (MAP_TILE_URL, MAP_TILE_ATTRIBUTION); none by default. */
  mapTiles: { url: string; attribution: string } | undefined;
}

/**
 * Where `npm run build` puts the console: console/dist beside src/, seen from this module in src/core/
 * and in the compiled dist/core/ alike (the test suite's .build/ links console/ in, scripts/run-tests.mjs).
 */
const BUILT_CONSOLE_DIR = fileURLToPath(new URL('../../console/dist/', import.meta.url));

type Env = Record<string, string | undefined>;

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** Reads a duration: plain seconds or a number with s, m, h or d. */
export function parseDuration(name: string, text: string): number {
  const match = /^(\d+)\s*([smhd]?)$/.exec(text.trim());
  if (!match) throw new ConfigError(`${name} must be a duration such as 3600, 90m, 12h or 7d (got "${text}")`);
  const units: Record<string, number> = { '': 1, s: 1, m: 60, h: 3600, d: 86400 };
  return Number(match[1]) * (units[match[2] as string] as number);
}

/**
 * A whole number written in decimal digits, else NaN: `Number` alone reads "0x1F" as 31, "1e3" as 1000
 * and a blank as 0, none of which a setting should mean.
 */
const decimalInteger = (text: string): number => (/^\d+$/.test(text.trim()) ? Number(text) : Number.NaN);

function parsePort(name: string, text: string): number {
  const port = decimalInteger(text);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new ConfigError(`${name} must be a port number between 0 and 65535 (got "${text}")`);
  }
  return port;
}

function parseBoolean(name: string, text: string | undefined, fallback = false): boolean {
  if (text === undefined || text === '') return fallback;
  if (/^(1|true|yes|on)$/i.test(text)) return true;
  if (/^(0|false|no|off)$/i.test(text)) return false;
  throw new ConfigError(`${name} must be true or false (got "${text}")`);
}

/** A duration of at least a second, in ms. */
function parseAtLeastASecond(name: string, text: string | undefined, fallback: string): number {
  const seconds = parseDuration(name, text || fallback);
  if (seconds < 1) throw new ConfigError(`${name} must be at least 1s (got "${text}")`);
  return seconds * 1000;
}

function parsePositive(name: string, text: string | undefined, fallback: number): number {
  if (text === undefined || text === '') return fallback;
  const value = decimalInteger(text);
  if (!Number.isInteger(value) || value < 1)
    throw new ConfigError(`${name} must be a positive integer (got "${text}")`);
  return value;
}

/** A whole number, 0 or more; absent is 0. */
function parseCount(name: string, text: string | undefined): number {
  if (text === undefined || text === '') return 0;
  const value = decimalInteger(text);
  if (!Number.isInteger(value) || value < 0)
    throw new ConfigError(`${name} must be 0 or a positive integer (got "${text}")`);
  return value;
}

/** An integer from 0 to 1000: a percentage that may exceed 100, or a number of milliseconds. */
function parseUpTo1000(name: string, text: string | undefined, fallback: number): number {
  if (text === undefined || text === '') return fallback;
  const value = decimalInteger(text);
  if (!(value >= 0 && value <= 1000))
    throw new ConfigError(`${name} must be an integer from 0 to 1000 (got "${text}")`);
  return value;
}

/** scrypt's N: a power of two, from 2 up to 2^17, which takes 128 MiB of memory per hash (r = 8). */
function parseHashCost(text: string | undefined): number {
  if (text === undefined || text === '') return 16384;
  const value = decimalInteger(text);
  if (!(value >= 2 && value <= 2 ** 17 && Number.isInteger(Math.log2(value)))) {
    throw new ConfigError(
      `THINGBASE_PASSWORD_HASH_COST must be a power of two from 2 to 131072, such as 16384 (got "${text}")`,
    );
  }
  return value;
}

function parseSynchronous(text: string | undefined): 'FULL' | 'NORMAL' {
  if (text === undefined || text === '') return 'FULL';
  const value = text.toUpperCase();
  if (value !== 'FULL' && value !== 'NORMAL')
    throw new ConfigError(`SQLITE_SYNCHRONOUS must be FULL or NORMAL (got "${text}")`);
  return value;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function parseLogLevel(text: string | undefined): string {
  if (text === undefined || text === '') return 'info';
  if (!LOG_LEVELS.includes(text))
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')} (got "${text}")`);
  return text;
}

function parseLogFormat(text: string | undefined): LogFormat | undefined {
  if (text === undefined || text === '') return undefined;
  if (text !== 'json' && text !== 'pretty') throw new ConfigError(`LOG_FORMAT must be json or pretty (got "${text}")`);
  return text;
}

/**
 * An address with one of these schemes, or undefined when unset. Read at start, so that a wrong one
 * stops the start naming its variable instead of failing later (a first delivery, a connection).
 */
function parseUrl(name: string, text: string | undefined, schemes: readonly string[]): string | undefined {
  if (text === undefined || text === '') return undefined;
  const url = URL.canParse(text) ? new URL(text) : undefined;
  if (!url || !schemes.includes(url.protocol.slice(0, -1)) || url.hostname === '') {
    throw new ConfigError(`${name} must be a URL such as ${schemes[0]}://host:port (${schemes.join(', ')})`);
  }
  return text;
}

/**
 * MAP_TILE_URL: an http(s) address of map tiles with `{z}`, `{x}` and `{y}` (and optionally `{s}`
 * for the server's subdomains), such as https://tile.openstreetmap.org/{z}/{x}/{y}.png; unset = no
 * tiles, so that the console fetches nothing from elsewhere (docs/configuration.md).
 */
function parseMapTiles(env: Env): Config['mapTiles'] {
  const url = env.MAP_TILE_URL;
  if (url === undefined || url === '') return undefined;
  const sample = url.replaceAll(/\{[sxyz]\}/g, 'a');
  const parsed = URL.canParse(sample) ? new URL(sample) : undefined;
  const placeholders = ['{z}', '{x}', '{y}'].every((p) => url.includes(p));
  if (!parsed || !['http:', 'https:'].includes(parsed.protocol) || !placeholders) {
    throw new ConfigError(
      `MAP_TILE_URL must be an http(s) address with {z}, {x} and {y}, such as https://tile.openstreetmap.org/{z}/{x}/{y}.png (got "${url}")`,
    );
  }
  return { url, attribution: env.MAP_TILE_ATTRIBUTION ?? '' };
}

/** Both TLS files, or neither: one without the other is an error naming the one missing. */
function parseTls(env: Env): Config['tls'] {
  const certFile = env.TLS_CERT_FILE || undefined;
  const keyFile = env.TLS_KEY_FILE || undefined;
  if (certFile && keyFile) return { certFile, keyFile };
  if (!certFile && !keyFile) return undefined;
  const [set, missing] = certFile ? ['TLS_CERT_FILE', 'TLS_KEY_FILE'] : ['TLS_KEY_FILE', 'TLS_CERT_FILE'];
  throw new ConfigError(`${set} is set without ${missing}: set both (PEM files) to serve HTTPS and MQTTS, or neither`);
}

/**
 * The shared-subscription group name (`$share/<group>/...`): MQTT forbids `/`, `+` and `#` in it. With
 * `/` the broker reads a different filter and the server hears no device; `+` or `#` fail the start
 * with the broker's message rather than the setting's.
 */
function shareGroup(text: string): string {
  if (/[/+#\s]/.test(text)) {
    throw new ConfigError(`MQTT_SHARE_GROUP must be a name without /, +, # or spaces (got "${text}")`);
  }
  return text;
}

/** MQTT_KEEPALIVE: 1s to 65535s (the most an MQTT CONNECT can say), default 60s; in seconds. */
function parseKeepalive(text: string | undefined): number {
  const ms = parseAtLeastASecond('MQTT_KEEPALIVE', text, '60s');
  if (ms > 65_535_000) throw new ConfigError(`MQTT_KEEPALIVE must be at most 65535s (got "${text}")`);
  return ms / 1000;
}

/** MQTT_SESSION_EXPIRY: 1s to 24d (a timer's longest), default 2h. */
function parseSessionExpiry(text: string | undefined): number {
  const ms = parseAtLeastASecond('MQTT_SESSION_EXPIRY', text, '2h');
  if (ms > 24 * 86_400_000) throw new ConfigError(`MQTT_SESSION_EXPIRY must be at most 24d (got "${text}")`);
  return ms;
}

/**
 * MQTT_ENDPOINT chose between the device endpoint and the aedes broker until aedes was removed: the
 * device endpoint is the only embedded MQTT server now. `thingbase` is still accepted; anything else
 * is refused rather than ignored, so a server set to the old broker says so at start.
 */
function checkMqttEndpoint(text: string | undefined): void {
  if (text === undefined || text === '' || text === 'thingbase') return;
  throw new ConfigError(
    `MQTT_ENDPOINT=${text} is no longer served: the device endpoint is the only embedded MQTT server; unset MQTT_ENDPOINT`,
  );
}

/**
 * The clients' sockets, HTTP and MQTT together, the process may hold (core/sockets.ts): below the
 * open-file limit, with room for everything else; without a known limit, 100,000.
 */
function socketBudget(): number {
  const files = openFileLimit();
  return files === undefined ? 100_000 : Math.max(1, files - RESERVED_FILES);
}

export function loadConfig(env: Env = process.env): Config {
  const port = env.PORT ? parsePort('PORT', env.PORT) : 3000;
  const host = env.HOST || '127.0.0.1';
  const databaseUrl = env.DATABASE_URL || 'sqlite:./data/thingbase.db';
  if (!/^(sqlite:|postgres:\/\/|postgresql:\/\/)/.test(databaseUrl)) {
    throw new ConfigError('DATABASE_URL must start with sqlite: or postgres://');
  }
  checkMqttEndpoint(env.MQTT_ENDPOINT);
  const mqttPortExplicit = env.MQTT_PORT !== undefined && env.MQTT_PORT !== '';
  const mqttsPortExplicit = env.MQTTS_PORT !== undefined && env.MQTTS_PORT !== '';
  const tls = parseTls(env);
  const urlHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  const budget = socketBudget();
  // A quarter of the budget: a flood of HTTP connections leaves the rest to devices on MQTT.
  const httpMaxConnections = parsePositive('HTTP_MAX_CONNECTIONS', env.HTTP_MAX_CONNECTIONS, Math.ceil(budget / 4));
  return {
    port,
    host,
    databaseUrl,
    databaseSchema: env.DATABASE_SCHEMA || undefined,
    sqliteSynchronous: parseSynchronous(env.SQLITE_SYNCHRONOUS),
    sqliteMaxBytes: env.SQLITE_MAX_SIZE_MB
      ? parsePositive('SQLITE_MAX_SIZE_MB', env.SQLITE_MAX_SIZE_MB, 0) * 1024 * 1024
      : undefined,
    adminEmail: env.THINGBASE_ADMIN_EMAIL || undefined,
    adminPassword: env.THINGBASE_ADMIN_PASSWORD || undefined,
    orgName: env.THINGBASE_ORG_NAME || 'Default',
    mqttPort: mqttPortExplicit ? parsePort('MQTT_PORT', env.MQTT_PORT as string) : 1883,
    mqttPortExplicit,
    tls,
    mqttsPort: mqttsPortExplicit ? parsePort('MQTTS_PORT', env.MQTTS_PORT as string) : 8883,
    mqttsPortExplicit,
    mqttUrl: parseUrl('MQTT_URL', env.MQTT_URL, ['mqtt', 'mqtts', 'tcp', 'tls', 'ws', 'wss']),
    mqttKeepaliveSeconds: parseKeepalive(env.MQTT_KEEPALIVE),
    mqttShareGroup: shareGroup(env.MQTT_SHARE_GROUP || 'thingbase'),
    socketBudget: budget,
    mqttMaxConnections: parsePositive('MQTT_MAX_CONNECTIONS', env.MQTT_MAX_CONNECTIONS, budget),
    httpMaxConnections,
    // A user's console tabs and scripts; an organisation's few dozen users (docs/configuration.md).
    realtimeMaxConnectionsPerUser: parsePositive(
      'REALTIME_MAX_CONNECTIONS_PER_USER',
      env.REALTIME_MAX_CONNECTIONS_PER_USER,
      20,
    ),
    // Never most of the HTTP connections, which one organisation's sockets would otherwise take.
    realtimeMaxConnectionsPerOrganisation: parsePositive(
      'REALTIME_MAX_CONNECTIONS_PER_ORGANISATION',
      env.REALTIME_MAX_CONNECTIONS_PER_ORGANISATION,
      Math.max(1, Math.min(500, Math.floor(httpMaxConnections / 4))),
    ),
    connectTimeoutMs: parseAtLeastASecond('CONNECT_TIMEOUT', env.CONNECT_TIMEOUT, '10s'),
    requestTimeoutMs: parseAtLeastASecond('REQUEST_TIMEOUT', env.REQUEST_TIMEOUT, '5m'),
    mqttMaxPending: parsePositive('MQTT_MAX_PENDING', env.MQTT_MAX_PENDING, 20_000),
    mqttMaxWaitMs: parsePositive('MQTT_MAX_WAIT_MS', env.MQTT_MAX_WAIT_MS, 500),
    mqttMaxPartialBytes: parsePositive('MQTT_MAX_PARTIAL_BYTES', env.MQTT_MAX_PARTIAL_BYTES, 64 * 1024 * 1024),
    mqttMaxSessions: parsePositive('MQTT_MAX_SESSIONS', env.MQTT_MAX_SESSIONS, 10_000),
    mqttSessionMaxMessages: parsePositive('MQTT_SESSION_MAX_MESSAGES', env.MQTT_SESSION_MAX_MESSAGES, 100),
    mqttSessionExpiryMs: parseSessionExpiry(env.MQTT_SESSION_EXPIRY),
    eventMaxPending: parsePositive('EVENT_MAX_PENDING', env.EVENT_MAX_PENDING, 100_000),
    // Off until the shares help under a flood on a small machine too (docs/operations.md).
    eventFairShare: parseBoolean('EVENT_FAIR_SHARE', env.EVENT_FAIR_SHARE, true),
    eventsPerSecondPerOrganisation: parseCount(
      'EVENTS_PER_SECOND_PER_ORGANISATION',
      env.EVENTS_PER_SECOND_PER_ORGANISATION,
    ),
    eventsPerSecondPerKeyPair: parseCount('EVENTS_PER_SECOND_PER_KEY_PAIR', env.EVENTS_PER_SECOND_PER_KEY_PAIR),
    eventWriteSpacingMs: parseUpTo1000('EVENT_WRITE_SPACING_MS', env.EVENT_WRITE_SPACING_MS, 2),
    eventWriteTimeoutMs: parsePositive('EVENT_WRITE_TIMEOUT_MS', env.EVENT_WRITE_TIMEOUT_MS, 1500),
    databaseConnectTimeoutMs: parsePositive('DATABASE_CONNECT_TIMEOUT_MS', env.DATABASE_CONNECT_TIMEOUT_MS, 1000),
    databaseStatementTimeoutMs:
      env.DATABASE_STATEMENT_TIMEOUT_MS === '0'
        ? 0
        : parsePositive('DATABASE_STATEMENT_TIMEOUT_MS', env.DATABASE_STATEMENT_TIMEOUT_MS, 5000),
    smtpUrl: parseUrl('SMTP_URL', env.SMTP_URL, ['smtp', 'smtps']),
    smtpFrom: env.SMTP_FROM || undefined,
    smsUrl: parseUrl('SMS_URL', env.SMS_URL, ['http', 'https']),
    idpConfigPath: env.IDP_CONFIG || undefined,
    logLevel: parseLogLevel(env.LOG_LEVEL),
    logFormat: parseLogFormat(env.LOG_FORMAT),
    logRequests: parseBoolean('LOG_REQUESTS', env.LOG_REQUESTS),
    trustProxy: parseBoolean('TRUST_PROXY', env.TRUST_PROXY),
    tokenIdleTtlSeconds: parseDuration('TOKEN_IDLE_TTL', env.TOKEN_IDLE_TTL || '7d'),
    tokenMaxTtlSeconds: parseDuration('TOKEN_MAX_TTL', env.TOKEN_MAX_TTL || '30d'),
    allowPrivateWebhooks: parseBoolean('ALLOW_PRIVATE_WEBHOOKS', env.ALLOW_PRIVATE_WEBHOOKS),
    checkAnswers: parseBoolean('THINGBASE_CHECK_ANSWERS', env.THINGBASE_CHECK_ANSWERS),
    metricsToken: env.METRICS_TOKEN || undefined,
    publicBaseUrl: (
      parseUrl('PUBLIC_BASE_URL', env.PUBLIC_BASE_URL, ['http', 'https']) ??
      `${tls ? 'https' : 'http'}://${urlHost}:${port}`
    ).replace(/\/+$/, ''),
    secretKey: env.THINGBASE_SECRET_KEY || undefined,
    passwordHashCost: parseHashCost(env.THINGBASE_PASSWORD_HASH_COST),
    deliveryTimeoutMs: parseDuration('DELIVERY_TIMEOUT', env.DELIVERY_TIMEOUT || '10s') * 1000,
    retentionSweepMs: parseDuration('RETENTION_SWEEP_INTERVAL', env.RETENTION_SWEEP_INTERVAL || '10m') * 1000,
    eventCompactionAgeMs: parseDuration('EVENT_COMPACTION_AGE', env.EVENT_COMPACTION_AGE || '24h') * 1000,
    eventCompactionMs: parseDuration('EVENT_COMPACTION_INTERVAL', env.EVENT_COMPACTION_INTERVAL || '10m') * 1000,
    deliveryRetryBaseMs: parsePositive('DELIVERY_RETRY_BASE_MS', env.DELIVERY_RETRY_BASE_MS, 5000),
    deliveryMaxAttempts: parsePositive('DELIVERY_MAX_ATTEMPTS', env.DELIVERY_MAX_ATTEMPTS, 10),
    noDataCheckMs: parsePositive('NO_DATA_CHECK_MS', env.NO_DATA_CHECK_MS, 1000),
    heapGrowingPercent: parseUpTo1000('HEAP_GROWING_PERCENT', env.HEAP_GROWING_PERCENT, 100),
    consoleDir: env.CONSOLE_DIR || BUILT_CONSOLE_DIR,
    apiRateLimit: parsePositive('API_RATE_LIMIT', env.API_RATE_LIMIT, 6000),
    mapTiles: parseMapTiles(env),
  };
}
