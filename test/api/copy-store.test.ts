import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, Migrator } from 'kysely';
import pg from 'pg';
import { copyStore } from '../../src/commands/copy-store.ts';
import { loadConfig } from '../../src/core/config.ts';
import { createDialect, sqlitePath } from '../../src/store/dialect.ts';
import { MIGRATIONS } from '../../src/store/migrations/index.ts';
import { LATEST_MIGRATION, openStore } from '../../src/store/store.ts';
import { STORE_TABLES } from '../../src/store/tables.ts';
import { Device, type KeyPair } from '../support/device.ts';
import { call } from '../support/http.ts';
import { type CliResult, runCli, serveProcess, stopProcess } from '../support/process.ts';
import { POSTGRES_URL, STORES, storeEnv } from '../support/stores.ts';

const [sqliteCase, postgresCase] = STORES as [(typeof STORES)[0], (typeof STORES)[1]];
const ADMIN = { email: 'copy@example.com', password: 'moving house' };
const HOUR = 3_600_000;

type Settings = { databaseUrl: string; databaseSchema?: string };

function succeeded(result: CliResult): CliResult {
  assert.equal(result.code, 0, `exit code ${result.code}:\n${result.stdout}\n${result.stderr}`);
  return result;
}

async function signIn(url: string, email = ADMIN.email, password = ADMIN.password): Promise<string> {
  const session = await call(url, 'POST', '/api_sign_in', { body: { email, password } });
  assert.equal(session.status, 200, session.text);
  return session.body.auth_token as string;
}

/** Every row of every table, each table's rows in a fixed order, blobs as hex: what a copy must keep. */
async function everyRow(settings: Settings): Promise<Record<string, string[]>> {
  const store = await openStore({ databaseUrl: settings.databaseUrl, schema: settings.databaseSchema });
  try {
    const tables: Record<string, string[]> = {};
    for (const table of STORE_TABLES) {
      const rows = await store.db.selectFrom(table).selectAll().execute();
      tables[table] = rows
        .map((row) =>
          JSON.stringify(
            Object.fromEntries(
              Object.entries(row as Record<string, unknown>)
                .sort(([a], [b]) => a.localeCompare(b))
                .map(([k, v]) => [k, v instanceof Uint8Array ? Buffer.from(v).toString('hex') : v]),
            ),
          ),
        )
        .sort();
    }
    return tables;
  } finally {
    await store.close();
  }
}

/** Rows per table of a PostgreSQL schema, or undefined when the schema does not exist. */
async function countsIn(schema: string): Promise<Record<string, number> | undefined> {
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    const exists = await client.query('select to_regnamespace($1) is not null as present', [schema]);
    if (!exists.rows[0].present) return undefined;
    const counts: Record<string, number> = {};
    for (const table of STORE_TABLES) {
      const { rows } = await client.query(`select count(*)::int as n from "${schema}"."${table}"`);
      counts[table] = rows[0].n;
    }
    return counts;
  } finally {
    await client.end();
  }
}

describe('thingbase copy-store, from SQLite to PostgreSQL', { skip: postgresCase.skip }, () => {
  const made: { store: typeof sqliteCase; settings: Settings }[] = [];
  const running: ChildProcess[] = [];
  after(async () => {
    for (const child of running) await stopProcess(child);
    for (const { store, settings } of made) await store.dispose(settings);
  });
  const fresh = (store: typeof sqliteCase): Settings => {
    const settings = store.fresh();
    made.push({ store, settings });
    return settings;
  };
  const serve = async (env: Record<string, string>) => {
    const server = await serveProcess(env);
    running.push(server.child);
    return server;
  };
  const copy = (from: Settings, to: Settings, env: Record<string, string> = {}) =>
    runCli(
      ['copy-store', '--from', from.databaseUrl, '--to', to.databaseUrl, '--schema', to.databaseSchema as string],
      env,
    );

  it('when a SQLite store is copied then a server on PostgreSQL answers the same data, sign-ins, key pairs, actions and audit trails', async () => {
    const source = fresh(sqliteCase);
    const target = fresh(postgresCase);
    // The secret key is the one generated on the first start and kept in the store: it travels with it.
    const first = await serve({
      ...storeEnv(source),
      THINGBASE_ADMIN_EMAIL: ADMIN.email,
      THINGBASE_ADMIN_PASSWORD: ADMIN.password,
      EVENT_COMPACTION_AGE: '1h',
      EVENT_COMPACTION_INTERVAL: '1',
    });
    const token = await signIn(first.url);
    const request = (method: string, path: string, body?: object) => call(first.url, method, path, { token, body });

    const template = await request('POST', '/api/v3/thing_templates', { thing_template: { name: 'Boilers' } });
    assert.equal(template.status, 200, template.text);
    const templateKey = template.body.thing_template.thing_template_key as string;
    const thingKeys: string[] = [];
    for (const name of ['Boiler A', 'Boiler B']) {
      const thing = await request('POST', '/api/v3/things', { thing: { name, thing_template_key: templateKey } });
      assert.equal(thing.status, 200, thing.text);
      thingKeys.push(thing.body.thing.thing_key as string);
    }
    const keyPairResponse = await request('POST', '/api/v3/key_pairs', { key_pair: { name: 'boiler gateway' } });
    assert.equal(keyPairResponse.status, 200, keyPairResponse.text);
    const keyPair = keyPairResponse.body.key_pair as KeyPair;
    const rule = await request('POST', '/api/v3/rules', {
      rule: { name: 'too hot', condition: 'temperature > 80', alert_type: 2, alert_message: 'hot: {{temperature}}' },
    });
    assert.equal(rule.status, 200, rule.text);
    const action = await request('POST', '/api/v3/notification_actions', {
      notification_action: {
        type: 'CallHttpUrlAction',
        rule_key: rule.body.rule.rule_key,
        method: 'POST',
        url: 'https://example.com/hook',
        headers: { Authorization: 'Bearer hook-secret' },
      },
    });
    assert.equal(action.status, 200, action.text);
    const actionKey = action.body.notification_action.notification_action_key as string;
    const roles = await request('GET', '/api/v3/roles');
    const roleKey = roles.body.roles[0].role_key as string;
    const user = await request('POST', '/api/v3/users', {
      user: { email: 'operator@example.com', password: 'operator password', role_key: roleKey, name: 'Operator' },
    });
    assert.equal(user.status, 200, user.text);
    const apiKey = await request('POST', '/api/v3/api_keys', { api_key: { name: 'nightly export' } });
    assert.equal(apiKey.status, 200, apiKey.text);
    const dashboard = await request('POST', '/api/v3/dashboards', { dashboard: { name: 'Plant floor' } });
    assert.equal(dashboard.status, 200, dashboard.text);

    // Older events, in two calendar months (two partitions of blocks on PostgreSQL), are compacted
    // into blocks (one per thing and hour) a second after they arrive; the newest stay rows.
    const now = new Date();
    const old = [2, 1].flatMap((monthsAgo, m) => {
      const hour = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - monthsAgo, 2, 12);
      return Array.from({ length: 120 }, (_, i) => {
        const n = m * 120 + i;
        return {
          timestamp: hour + i * 60_000,
          data: {
            temperature: 20 + (n % 50) / 10,
            state: n % 3 === 0 ? 'idle' : 'run',
            on: n % 2 === 0,
            detail: { n },
          },
        };
      });
    });
    const recent = Array.from({ length: 20 }, (_, n) => ({
      timestamp: Date.now() - (20 - n) * 60_000,
      data: { temperature: 30 + n, state: 'run', on: true, detail: { n: 1000 + n } },
    }));
    for (const thingKey of thingKeys) {
      const posted = await request('POST', `/api/v3/things/${thingKey}/events`, { events: [...old, ...recent] });
      assert.equal(posted.status, 200, posted.text);
    }
    // A device event over the key pair fires the rule: an alert and a delivery.
    const device = new Device(first.url, keyPair);
    const hot = await device.event({ thing_key: thingKeys[0], data: { temperature: 95 } });
    assert.equal(hot.status, 200, hot.text);

    const beside = new BetterSqlite3(sqlitePath(source.databaseUrl), { readonly: true });
    try {
      const count = (text: string) => beside.prepare(text).pluck().get() as number;
      for (
        let i = 0;
        i < 300 && count(`select count(*) from events where timestamp < ${Date.now() - 2 * HOUR}`) > 0;
        i++
      ) {
        await sleep(100);
      }
      assert.equal(count(`select count(*) from events where timestamp < ${Date.now() - 2 * HOUR}`), 0, 'compacted');
      assert.ok(count('select count(*) from event_blocks') > 0);
      assert.ok(count('select count(*) from events') > 0, 'the newest events stay rows');
    } finally {
      beside.close();
    }

    const queries = async (url: string, asToken: string) => {
      const answers: Record<string, unknown> = {};
      for (const thingKey of thingKeys) {
        const data = await call(url, 'POST', '/api/v3/query/thing_data', {
          token: asToken,
          body: { thing_key: thingKey, per: 1000, order: 'asc' },
        });
        assert.equal(data.status, 200, data.text);
        answers[`data ${thingKey}`] = data.body;
      }
      for (const path of [
        '/api/v3/things',
        '/api/v3/alerts',
        '/api/v3/dashboards',
        '/api/v3/users',
        '/api/v3/key_pairs',
      ]) {
        const listed = await call(url, 'GET', path, { token: asToken, query: { per: 100 } });
        assert.equal(listed.status, 200, listed.text);
        answers[path] = listed.body;
      }
      const trails = await call(url, 'GET', '/api/v3/audit_trails', { token: asToken, query: { per: 100 } });
      assert.equal(trails.status, 200, trails.text);
      answers.audit_trails = (trails.body.audit_trails as { audit_trail_key: string }[]).map((t) => t.audit_trail_key);
      return answers;
    };
    const onSqlite = await queries(first.url, token);
    const sqliteData = onSqlite[`data ${thingKeys[0]}`] as Record<
      string,
      { event_data: unknown[]; total_event_count: number }
    >;
    assert.equal(sqliteData[thingKeys[0] as string]?.total_event_count, 261);
    assert.ok((onSqlite.audit_trails as string[]).length >= 8, 'audit trails of what was made');
    await stopProcess(first.child);

    const copied = succeeded(await copy(source, target));
    assert.match(copied.stdout, new RegExp(`Brought the PostgreSQL schema up to ${LATEST_MIGRATION}`));
    assert.match(copied.stdout, /Copied [\d,]+ rows of \d+ tables .* rows\/s\):/);
    assert.match(copied.stdout, /^ {2}events +\d+$/m);
    assert.match(copied.stdout, /^ {2}event_blocks +\d+$/m);
    assert.match(copied.stdout, /Every table holds as many rows in PostgreSQL as in the SQLite store/);
    assert.match(copied.stderr, /copy-store events: \d+ rows copied/, 'progress per table');
    // Every row of every table, as both engines read it back.
    assert.deepEqual(await everyRow(target), await everyRow(source));
    // The sequences go on past the copied ids (blocks too: the PostgreSQL server below compacts nothing).
    const client = new pg.Client({ connectionString: POSTGRES_URL });
    await client.connect();
    try {
      for (const [table, id] of [
        ['things', 'thing_id'],
        ['events', 'event_id'],
        ['event_blocks', 'block_id'],
      ] as const) {
        const { rows } = await client.query(
          `select (select last_value from "${target.databaseSchema}"."${table}_${id}_seq")::bigint as next,
             (select max(${id}) from "${target.databaseSchema}"."${table}")::bigint as largest`,
        );
        assert.ok(Number(rows[0].next) >= Number(rows[0].largest), `${table}: ${JSON.stringify(rows[0])}`);
      }
    } finally {
      await client.end();
    }

    // Without THINGBASE_SECRET_KEY: the generated key came with the data, and opens the sealed secrets.
    const second = await serve(storeEnv(target));
    assert.doesNotMatch(second.output(), /shown only this once/, 'the copied store has its users: no new admin');
    const pgToken = await signIn(second.url);
    const onPostgres = await queries(second.url, pgToken);
    assert.deepEqual({ ...onPostgres, audit_trails: [] }, { ...onSqlite, audit_trails: [] });
    const pgTrails = onPostgres.audit_trails as string[];
    for (const key of onSqlite.audit_trails as string[]) assert.ok(pgTrails.includes(key), `audit trail ${key} copied`);
    await signIn(second.url, 'operator@example.com', 'operator password');
    const withApiKey = await call(second.url, 'GET', '/api/v3/things', { token: apiKey.body.api_key.token });
    assert.equal(withApiKey.status, 200, withApiKey.text);
    const reread = await call(second.url, 'GET', `/api/v3/notification_actions/${actionKey}`, { token: pgToken });
    assert.equal(reread.status, 200, reread.text);
    assert.equal(reread.body.notification_action.headers.Authorization, 'Bearer hook-secret');
    // The key pair still signs; new events, things and blocks get ids past the copied ones.
    const signed = await new Device(second.url, keyPair).event({ thing_key: thingKeys[1], data: { temperature: 21 } });
    assert.equal(signed.status, 200, signed.text);
    const newThing = await call(second.url, 'POST', '/api/v3/things', {
      token: pgToken,
      body: { thing: { name: 'Boiler C', thing_template_key: templateKey } },
    });
    assert.equal(newThing.status, 200, newThing.text);
    const after = await call(second.url, 'POST', '/api/v3/query/thing_data', {
      token: pgToken,
      body: { thing_key: thingKeys[1], per: 1, order: 'desc' },
    });
    assert.equal(after.body[thingKeys[1] as string].total_event_count, 261);
    assert.equal(after.body[thingKeys[1] as string].event_data[0].data.temperature, 21);
  });

  it('when the target already holds an organisation or any row then it is refused and nothing is written', async () => {
    const source = fresh(sqliteCase);
    succeeded(await runCli(['admin', 'create', '--email', 'source@example.com'], storeEnv(source)));
    const target = fresh(postgresCase);
    succeeded(await runCli(['admin', 'create', '--email', 'target@example.com'], storeEnv(target)));
    const schema = target.databaseSchema as string;
    const before = await countsIn(schema);

    const refused = await copy(source, target);
    assert.equal(refused.code, 1, refused.stdout);
    assert.match(
      refused.stderr,
      new RegExp(
        `the PostgreSQL schema ${schema} of database .* is not empty \\(1 organisation\\(s\\), 1 user\\(s\\)\\): copy-store copies into an empty database or schema only.*Nothing was written`,
      ),
    );
    assert.deepEqual(await countsIn(schema), before);

    // A schema with no organisation but rows elsewhere (a start that failed early) is refused too.
    const leftover = fresh(postgresCase);
    succeeded(await runCli(['migrate'], storeEnv(leftover)));
    const store = await openStore({ databaseUrl: leftover.databaseUrl, schema: leftover.databaseSchema });
    await store.db.insertInto('server_secrets').values({ name: 'secret_box_key', value: 'left over' }).execute();
    await store.close();
    const leftoverBefore = await countsIn(leftover.databaseSchema as string);
    const refusedAgain = await copy(source, leftover);
    assert.equal(refusedAgain.code, 1, refusedAgain.stdout);
    assert.match(refusedAgain.stderr, /the target is not empty \(rows in server_secrets\).*Nothing was copied/);
    assert.deepEqual(await countsIn(leftover.databaseSchema as string), leftoverBefore);
  });

  it('when the SQLite store is written to during the copy then nothing is copied and it says to stop the server', async () => {
    const source = fresh(sqliteCase);
    succeeded(await runCli(['admin', 'create', '--email', 'busy@example.com'], storeEnv(source)));
    const target = fresh(postgresCase);
    // What a server still running on the store does: commit, here as the first table is done.
    const writer = new BetterSqlite3(sqlitePath(source.databaseUrl));
    let wrote = false;
    const progress = {
      isTTY: false,
      write: () => {
        if (!wrote) writer.prepare(`insert into sign_in_failures values ('x@example.com', '10.0.0.1', 1)`).run();
        wrote = true;
        return true;
      },
    } as unknown as NodeJS.WriteStream;
    try {
      await assert.rejects(
        copyStore(loadConfig({}), {
          from: source.databaseUrl,
          to: target.databaseUrl,
          schema: target.databaseSchema,
          progress,
        }),
        /was written to while it was copied \(a server or another command still uses it\): stop it and run copy-store again/,
      );
    } finally {
      writer.close();
    }
    assert.ok(wrote);
    const counts = await countsIn(target.databaseSchema as string);
    assert.deepEqual(
      Object.values(counts ?? {}).filter((n) => n > 0),
      [],
      'every table of the target is empty',
    );
  });

  it('when PostgreSQL refuses a value then nothing is copied and the message names the table', async () => {
    const source = fresh(sqliteCase);
    succeeded(await runCli(['admin', 'create', '--email', 'nul@example.com'], storeEnv(source)));
    // SQLite keeps a NUL character in text; PostgreSQL's text cannot hold one.
    const writer = new BetterSqlite3(sqlitePath(source.databaseUrl));
    writer.prepare('update audit_trails set entity_name = ?').run('bad\u0000name');
    writer.close();
    const target = fresh(postgresCase);
    const refused = await copy(source, target);
    assert.equal(refused.code, 1, refused.stdout);
    assert.match(
      refused.stderr,
      /PostgreSQL refused a row of audit_trails \(SQLite row ids \d+ to \d+\): .*Nothing was copied: the transaction was rolled back/,
    );
    const counts = await countsIn(target.databaseSchema as string);
    assert.deepEqual(
      Object.values(counts ?? {}).filter((n) => n > 0),
      [],
      'every table of the target is empty',
    );
  });

  it('when the PostgreSQL database cannot be reached then it says so in the words a server start does, naming --to', async () => {
    const source = fresh(sqliteCase);
    succeeded(await runCli(['migrate'], storeEnv(source)));
    const refused = await runCli([
      'copy-store',
      '--from',
      source.databaseUrl,
      '--to',
      'postgres://thingbase:hidden@127.0.0.1:1/none',
    ]);
    assert.equal(refused.code, 1, refused.stdout);
    assert.match(
      refused.stderr,
      /^copy-store: cannot reach the database at postgres:\/\/thingbase:\*\*\*@127\.0\.0\.1:1\/none \([^)]*ECONNREFUSED[^)]*\): check --to \(postgres:\/\/user:password@host:port\/database\) and that the database runs\n$/,
    );
  });

  it('when the SQLite store is not at the latest migration then it is refused until thingbase migrate runs on it', async () => {
    const source = fresh(sqliteCase);
    const previous = Object.keys(MIGRATIONS).sort().at(-2) as string;
    // A store left by the previous release.
    const db = new Kysely<unknown>({ dialect: createDialect(source.databaseUrl) });
    try {
      const { error } = await new Migrator({ db, provider: { getMigrations: async () => MIGRATIONS } }).migrateTo(
        previous,
      );
      assert.equal(error, undefined);
    } finally {
      await db.destroy();
    }
    const target = fresh(postgresCase);
    const refused = await copy(source, target);
    assert.equal(refused.code, 1, refused.stdout);
    assert.match(
      refused.stderr,
      new RegExp(
        `the SQLite store .* is at migration ${previous}, not ${LATEST_MIGRATION}: bring it up to date first with DATABASE_URL=sqlite:.* thingbase migrate`,
      ),
    );
    assert.equal(await countsIn(target.databaseSchema as string), undefined, 'the target schema was not even made');

    succeeded(await runCli(['migrate'], storeEnv(source)));
    succeeded(await copy(source, target));
  });
});
