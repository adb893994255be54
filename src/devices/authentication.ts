/**
 * Device requests (docs/devices.md, "HTTP"): `X-Access-Key` names a key pair and `X-Dtn-Signature` is
 * the HMAC-SHA256 of the raw body (after LZF decompression when `X-Compressed: LZF`) under its secret
 * key. The signature is checked on the bytes before any JSON parsing, whatever the Content-Type says.
 */
import type { FastifyRequest } from 'fastify';
import type { ChangeFeed } from '../core/change-feed.ts';
import { ApiError, unauthorized } from '../core/errors.ts';
import { BULK_BODY_LIMIT, describeBytes, rawBody } from '../core/http/body.ts';
import type { Principal } from '../core/principal.ts';
import { monotonicNow, RecentReads } from '../core/recent-reads.ts';
import type { SecretBox } from '../core/secret-box.ts';
import { findCredentials } from '../keypairs/service.ts';
import { withStoreDeadline } from '../store/faults.ts';
import type { Executor } from '../store/store.ts';
import { decompressLzf, LzfFormatError } from './lzf.ts';
import { verifySignature } from './signature.ts';

const SECRET_CACHE_SIZE = 10_000;

/**
 * How long a key pair's credentials are used again without reading the store (core/recent-reads.ts):
 * a key pair, role or organisation changed through this server takes effect at once, one changed
 * through another server on the same PostgreSQL store within this time.
 */
const CREDENTIALS_CACHE_MS = 1000;
const MAX_CACHED_CREDENTIALS = 10_000;

export interface DeviceCredentials {
  principal: Principal;
  accessKey: string;
  secretKey: string;
}

interface Reading {
  credentials: Promise<DeviceCredentials | undefined>;
  startedAt: number;
}

export class DeviceAuthenticator {
  /** Opened secrets by sealed text: opening costs more than the signature check itself. */
  private readonly secrets = new Map<string, string>();
  /**
   * Credentials by access key, in the scope of their organisation: most device requests then cost no
   * store read before their own work.
   */
  private readonly recent = new RecentReads<DeviceCredentials>(CREDENTIALS_CACHE_MS, MAX_CACHED_CREDENTIALS);
  /** Reads under way, by access key. */
  private readonly reading = new Map<string, Reading>();
  private readonly stopListening: () => void;

  constructor(
    private readonly db: Executor,
    private readonly box: SecretBox,
    changes: ChangeFeed,
    /** How long a read of credentials may wait for the store (ms; store/faults.ts), unbounded if not given. */
    private readonly readDeadlineMs?: number,
  ) {
    this.stopListening = changes.follow(['KeyPair', 'Role', 'Organisation'], (change) => {
      // A key pair or role belongs to the organisation the change is recorded in; an organisation
      // is changed by its parent, in whose name the change is recorded.
      if (change.organisationKey === null || (change.entityType === 'Organisation' && change.entityKey === null)) {
        this.recent.changedEverywhere();
      } else {
        this.recent.changed(
          change.entityType === 'Organisation' && change.entityKey !== null
            ? [change.organisationKey, change.entityKey]
            : [change.organisationKey],
        );
      }
    });
  }

  close(): void {
    this.stopListening();
    this.recent.clear();
  }

  /** The credentials of an access key when they were read lately enough to be used without reading them again. */
  recentCredentials(accessKey: string): DeviceCredentials | undefined {
    return this.recent.get(accessKey);
  }

  /** The key pair behind an access key, or undefined. Also used for MQTT logins and messages. */
  async credentials(accessKey: string): Promise<DeviceCredentials | undefined> {
    // No access key holds a NUL character (they are letters and digits, docs/devices.md), and
    // PostgreSQL would refuse to look one up (an MQTT user name may carry one).
    if (accessKey.includes('\u0000')) return undefined;
    const now = monotonicNow();
    const recent = this.recent.get(accessKey, now);
    if (recent) return recent;
    // Requests of one key pair arriving together (a fleet sharing it) share a read, unless it began
    // before a change, or while the change may not have committed, in any organisation.
    const under = this.reading.get(accessKey);
    if (under && this.recent.isAfterEveryChange(under.startedAt)) return under.credentials;
    const reading: Reading = {
      startedAt: now,
      credentials: this.read(accessKey, now).finally(() => {
        if (this.reading.get(accessKey) === reading) this.reading.delete(accessKey);
      }),
    };
    this.reading.set(accessKey, reading);
    return reading.credentials;
  }

  private async read(accessKey: string, startedAt: number): Promise<DeviceCredentials | undefined> {
    const row =
      this.readDeadlineMs === undefined
        ? await findCredentials(this.db, accessKey)
        : await withStoreDeadline(this.readDeadlineMs, () => findCredentials(this.db, accessKey));
    if (!row) {
      this.recent.delete(accessKey);
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
        email: null,
        roleKey: row.role_key,
        roleName: row.role_name,
        accountAdmin: false,
        abilities: new Set(JSON.parse(row.abilities) as number[]),
        organisationKey: row.organisation_key,
        organisationIsOem: row.is_oem === 1,
        timeZone: 'Etc/UTC',
        accessKey,
      }),
    });
    this.recent.set(accessKey, credentials, row.organisation_key, startedAt);
    return credentials;
  }

  /**
   * What can be checked of a device request before its body is read: its headers name a key pair.
   * One that does not is answered 401 without its body being read (docs/api.md, "Requests").
   */
  async checkKey(request: FastifyRequest): Promise<DeviceCredentials> {
    const accessKey = header(request, 'x-access-key');
    const signature = header(request, 'x-dtn-signature');
    if (!accessKey || !signature) throw unauthorized('X-Access-Key and X-Dtn-Signature are required');
    const credentials = await this.credentials(accessKey);
    if (!credentials) throw unauthorized('unknown access key or wrong signature');
    return credentials;
  }

  async authenticate(request: FastifyRequest): Promise<{ principal: Principal; body: Buffer | undefined }> {
    const credentials = await this.checkKey(request);
    const signature = header(request, 'x-dtn-signature') as string;
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
        tooLarge
          ? { code: 'too_large', param: 'body', message: `decompresses to more than ${describeBytes(BULK_BODY_LIMIT)}` }
          : { code: 'invalid', param: 'body', message: `is not valid LZF: ${error.message}` },
      ]);
    }
    throw error;
  }
}
