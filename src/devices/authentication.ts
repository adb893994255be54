/**
 * Device requests (DEVICES.md): `X-Access-Key` names a key pair and `X-Dtn-Signature` is the
 * HMAC-SHA256 of the raw body (after LZF decompression when `X-Compressed: LZF`) under its secret key.
 * The signature is checked on the bytes before any JSON parsing, whatever the Content-Type says.
 */
import type { FastifyRequest } from 'fastify';
import { onChangesTo } from '../audit/recorder.ts';
import { ApiError, unauthorized } from '../core/errors.ts';
import { BULK_BODY_LIMIT, rawBody } from '../core/http/body.ts';
import type { Principal } from '../core/principal.ts';
import type { SecretBox } from '../core/secret-box.ts';
import { findCredentials } from '../keypairs/repository.ts';
import type { Executor } from '../store/store.ts';
import { decompressLzf, LzfFormatError } from './lzf.ts';
import { verifySignature } from './signature.ts';

const SECRET_CACHE_SIZE = 10_000;

/**
 * How long a key pair's credentials are reused without reading the store, as callers behind tokens
 * are (sessions/service.ts): a key pair, role or organisation changed through this server takes
 * effect at once, one changed through another server on the same PostgreSQL store within this time.
 */
const CREDENTIALS_CACHE_MS = 1000;
const MAX_CACHED_CREDENTIALS = 10_000;

export interface DeviceCredentials {
  principal: Principal;
  accessKey: string;
  secretKey: string;
}

interface CachedCredentials {
  credentials: DeviceCredentials;
  /** When its read began (monotonic ms). */
  cachedAt: number;
}

interface Reading {
  credentials: Promise<DeviceCredentials | undefined>;
  startedAt: number;
}

/** Milliseconds that never go back, unlike the wall clock. */
const clock = () => performance.now();

export class DeviceAuthenticator {
  /** Opened secrets by sealed text: opening costs more than the signature check itself. */
  private readonly secrets = new Map<string, string>();
  /** Credentials by access key: most device requests then cost no store read before their own work. */
  private readonly cached = new Map<string, CachedCredentials>();
  /**
   * When a key pair, role or organisation of an organisation last changed here (recent changes
   * only): its credentials read before then, or while the change's transaction may not have
   * committed, are read again.
   */
  private readonly changedAt = new Map<string, number>();
  /** When any of them last changed here. */
  private lastChangeAt = Number.NEGATIVE_INFINITY;
  /** Reads under way, by access key. */
  private readonly reading = new Map<string, Reading>();
  private readonly stopListening: () => void;

  constructor(
    private readonly db: Executor,
    private readonly box: SecretBox,
  ) {
    this.stopListening = onChangesTo(['KeyPair', 'Role', 'Organisation'], (change) => {
      const now = clock();
      // A key pair or role belongs to the organisation the change is recorded in; an organisation
      // is changed by its parent, in whose name the change is recorded.
      const organisations = new Set([change.organisationKey]);
      if (change.entityType === 'Organisation') organisations.add(change.entityKey);
      for (const [organisation, at] of this.changedAt) {
        if (at < now - 2 * CREDENTIALS_CACHE_MS) this.changedAt.delete(organisation);
      }
      for (const organisation of organisations) this.changedAt.set(organisation, now);
      this.lastChangeAt = now;
      for (const [accessKey, entry] of this.cached) {
        if (organisations.has(entry.credentials.principal.organisationKey)) this.cached.delete(accessKey);
      }
    });
  }

  close(): void {
    this.stopListening();
    this.cached.clear();
  }

  /** The credentials of an access key when they were read lately enough to be used without reading them again. */
  recentCredentials(accessKey: string, now = clock()): DeviceCredentials | undefined {
    const hit = this.cached.get(accessKey);
    if (!hit || now - hit.cachedAt >= CREDENTIALS_CACHE_MS) return undefined;
    const changedAt = this.changedAt.get(hit.credentials.principal.organisationKey);
    return changedAt === undefined || hit.cachedAt > changedAt + CREDENTIALS_CACHE_MS ? hit.credentials : undefined;
  }

  /** The key pair behind an access key, or undefined. Also used for MQTT logins and messages. */
  async credentials(accessKey: string): Promise<DeviceCredentials | undefined> {
    const now = clock();
    const recent = this.recentCredentials(accessKey, now);
    if (recent) return recent;
    // Requests of one key pair arriving together (a fleet sharing it) share a read, unless it began
    // before a change, or while the change may not have committed, in any organisation.
    const under = this.reading.get(accessKey);
    if (under && under.startedAt > this.lastChangeAt + CREDENTIALS_CACHE_MS) return under.credentials;
    const reading: Reading = {
      startedAt: now,
      credentials: this.read(accessKey, now).finally(() => {
        if (this.reading.get(accessKey) === reading) this.reading.delete(accessKey);
      }),
    };
    this.reading.set(accessKey, reading);
    return reading.credentials;
  }

  private async read(accessKey: string, now: number): Promise<DeviceCredentials | undefined> {
    const row = await findCredentials(this.db, accessKey);
    if (!row) {
      this.cached.delete(accessKey);
      return undefined;
    }
    let secretKey = this.secrets.get(row.secret_key_sealed);
    if (secretKey === undefined) {
      secretKey = this.box.open(row.secret_key_sealed);
      if (this.secrets.size >= SECRET_CACHE_SIZE) this.secrets.clear();
      this.secrets.set(row.secret_key_sealed, secretKey);
    }
    const credentials: DeviceCredentials = Object.freeze({
      accessKey,
      secretKey,
      principal: Object.freeze({
        kind: 'device',
        userKey: null,
        userName: `key pair ${row.name}`,
        roleKey: row.role_key,
        roleName: row.role_name,
        accountAdmin: false,
        abilities: new Set(JSON.parse(row.abilities) as number[]),
        organisationKey: row.organisation_key,
        organisationIsOem: row.is_oem === 1,
        timeZone: 'Etc/UTC',
      }),
    });
    if (this.cached.size >= MAX_CACHED_CREDENTIALS) this.cached.delete(this.cached.keys().next().value as string);
    // Read from when it began: a change recorded since then makes it be read again.
    this.cached.set(accessKey, { credentials, cachedAt: now });
    return credentials;
  }

  async authenticate(request: FastifyRequest): Promise<{ principal: Principal; body: Buffer | undefined }> {
    const accessKey = header(request, 'x-access-key');
    const signature = header(request, 'x-dtn-signature');
    if (!accessKey || !signature) throw unauthorized('X-Access-Key and X-Dtn-Signature are required');
    const credentials = await this.credentials(accessKey);
    if (!credentials) throw unauthorized('unknown access key or wrong signature');
    const body = decompressed(request, rawBody(request));
    if (!verifySignature(credentials.secretKey, body ?? Buffer.alloc(0), signature)) {
      throw unauthorized('unknown access key or wrong signature');
    }
    return { principal: credentials.principal, body };
  }
}

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function decompressed(request: FastifyRequest, body: Buffer | undefined): Buffer | undefined {
  if (!body || header(request, 'x-compressed')?.toUpperCase() !== 'LZF') return body;
  try {
    return decompressLzf(body, BULK_BODY_LIMIT);
  } catch (error) {
    if (error instanceof LzfFormatError) {
      const tooLarge = error.code === 'LZF_TOO_LARGE';
      throw new ApiError(tooLarge ? 413 : 400, [
        { code: tooLarge ? 'too_large' : 'invalid', param: 'body', message: `LZF body: ${error.message}` },
      ]);
    }
    throw error;
  }
}
