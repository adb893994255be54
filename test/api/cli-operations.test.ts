/**
 * The operations commands (`backup`, `import things`, `export events`) run as their own processes
 * against a server process, as an operator runs them.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import BetterSqlite3 from 'better-sqlite3';
import { Device, type KeyPair } from '../support/device.ts';
import { call } from '../support/http.ts';
import { type CliResult, cli, runCli, serveProcess, stopProcess } from '../support/process.ts';
import { STORES } from '../support/stores.ts';

const ADMIN = { THINGBASE_ADMIN_EMAIL: 'ops@example.com', THINGBASE_ADMIN_PASSWORD: 'operations password' };

function succeeded(result: CliResult): CliResult {
  assert.equal(result.code, 0, `exit code ${result.code}:\n${result.stdout}\n${result.stderr}`);
  return result;
}

/** Runs the command on a pseudo-terminal (util-linux `script`), as an operator at a terminal would. */
function runOnTerminal(args: string[], env: Record<string, string>): Promise<string> {
  const line = [process.execPath, ...cli(args)].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(' ');
  const child = spawn('script', ['-qec', line, '/dev/null'], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  return new Promise((resolve) => child.once('close', () => resolve(output)));
}

describe('thingbase operations commands without a server', () => {
  it('when no server answers at the address then import, export and simulate name it and say how to give another', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'thingbase-remote-'));
    const csv = join(dir, 'things.csv');
    writeFileSync(csv, 'thing_key,name\nk1,One\n');
    // A port nothing listens on: a server of its own, closed.
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise((resolve) => closed.close(resolve));
    const env = { THINGBASE_TOKEN: 'some token', PUBLIC_BASE_URL: `http://127.0.0.1:${port}` };
    for (const args of [
      ['import', 'things', csv],
      ['export', 'events', '--thing', 'k1'],
      ['simulate', '--http'],
    ]) {
      const result = await runCli(args, env);
      assert.equal(result.code, 1, result.stderr);
      assert.match(
        result.stderr,
        new RegExp(
          `^cannot reach the server at http://127\\.0\\.0\\.1:${port} \\(ECONNREFUSED\\): give its address with --url, or set PUBLIC_BASE_URL \\(or HOST and PORT\\) as the server has them$`,
          'm',
        ),
        args.join(' '),
      );
    }
  });

  it('when a command that talks to a server has no token then each says how to give one in the same words', async () => {
    const token = '--token <API key or session token> (or THINGBASE_TOKEN)';
    for (const [args, said] of [
      [['import', 'things', 'things.csv'], `a token is needed: ${token}`],
      [['export', 'events', '--thing', 'k1'], `a token is needed: ${token}`],
      [['simulate', '--http'], `a key pair is needed: --access-key and --secret-key, or ${token} to make one`],
      [
        ['simulate', '--http', '--access-key', 'a', '--secret-key', 's', '--template', 'T'],
        `--template needs ${token} to find or make the template`,
      ],
    ] as const) {
      const result = await runCli([...args], { THINGBASE_TOKEN: '' });
      assert.deepEqual([result.code, result.stderr], [1, `${said}\n`], args.join(' '));
    }
  });
});

for (const store of STORES) {
  describe(`thingbase operations commands [${store.name}]`, { skip: store.skip }, () => {
    const settings = store.fresh();
    const env: Record<string, string> = {
      ...ADMIN,
      DATABASE_URL: settings.databaseUrl,
      ...(settings.databaseSchema ? { DATABASE_SCHEMA: settings.databaseSchema } : {}),
    };
    const folder = mkdtempSync(join(tmpdir(), 'thingbase-ops-'));
    const running: ChildProcess[] = [];
    let url: string;
    let token: string;
    /** `export events` of the thing `exported` from `from` to `to` (epoch seconds) into `output`, with `more` options. */
    const exportArgs = (from: number, to: number, output: string, ...more: string[]) => [
      'export',
      'events',
      '--thing',
      'exported',
      '--from',
      String(from),
      '--to',
      String(to),
      ...more,
      '--output',
      output,
      '--url',
      url,
      '--token',
      token,
    ];
    let pair: KeyPair;

    before(async () => {
      const server = await serveProcess(env);
      running.push(server.child);
      url = server.url;
      const signIn = await call(url, 'POST', '/api_sign_in', {
        body: { email: ADMIN.THINGBASE_ADMIN_EMAIL, password: ADMIN.THINGBASE_ADMIN_PASSWORD },
      });
      const key = await call(url, 'POST', '/api/v3/api_keys', {
        token: signIn.body.auth_token,
        body: { api_key: { name: 'operations' } },
      });
      token = key.body.api_key.token;
      const created = await call(url, 'POST', '/api/v3/key_pairs', {
        token: signIn.body.auth_token,
        body: { key_pair: { name: 'devices' } },
      });
      pair = created.body.key_pair as KeyPair;
    });
    after(async () => {
      for (const child of running) await stopProcess(child);
      await store.dispose(settings);
    });

    it('when import things is given a CSV then the server imports it, and the counts and failed rows are printed', async () => {
      const file = join(folder, 'things.csv');
      writeFileSync(file, 'thing_key,name,tags\ncli-1,Pump 1,"a,b"\ncli-2,Pump 2,\ncli-3,,\n');
      const partial = await runCli(['import', 'things', file, '--url', url, '--token', token]);
      assert.equal(partial.code, 1, 'a failed row is a failure');
      assert.match(partial.stdout, /^created 2, updated 0, failed 1\nrow 3: name /m);
      assert.match(partial.stderr, /^import: \d+ of \d+ bytes sent$/m, 'a plain progress line');
      assert.match(partial.stderr, /^import: created 2, updated 0, failed 1$/m);
      const thing = await call(url, 'GET', '/api/v3/things/cli-1', { token });
      assert.deepEqual(thing.body.thing.tags_array, ['a', 'b']);

      writeFileSync(file, 'thing_key,name\ncli-1,Renamed\ncli-4,New\n');
      // The address from the environment (PORT), the token from THINGBASE_TOKEN.
      const dry = succeeded(
        await runCli(['import', 'things', file, '--mode', 'upsert', '--dry-run'], {
          PORT: new URL(url).port,
          THINGBASE_TOKEN: token,
        }),
      );
      assert.match(dry.stdout, /would create 1, would update 1, failed 0/);
      assert.equal((await call(url, 'GET', '/api/v3/things/cli-4', { token })).status, 404);

      const noToken = await runCli(['import', 'things', file, '--url', url]);
      assert.notEqual(noToken.code, 0);
      assert.match(noToken.stderr, /a token is needed/);
      const badToken = await runCli(['import', 'things', file, '--url', url, '--token', 'tbk_wrong']);
      assert.notEqual(badToken.code, 0);
      assert.match(badToken.stderr, /the server answered 401: a valid X-Auth-Token is required/);
      // Something else at the address (a proxy's error page): its text is told as it is.
      const proxy = createServer((_request, response) => response.writeHead(502).end('Bad Gateway'));
      await new Promise<void>((done) => proxy.listen(0, '127.0.0.1', done));
      try {
        const { port } = proxy.address() as AddressInfo;
        const elsewhere = await runCli([
          'import',
          'things',
          file,
          '--url',
          `http://127.0.0.1:${port}`,
          '--token',
          token,
        ]);
        assert.notEqual(elsewhere.code, 0);
        assert.match(elsewhere.stderr, /the server answered 502: Bad Gateway/);
      } finally {
        proxy.close();
      }
    });

    it('when export events runs then the events of the range are written as CSV or NDJSON', async () => {
      const device = new Device(url, pair);
      assert.equal((await device.register({ thing_key: 'exported' })).status, 200);
      const start = Date.UTC(2026, 0, 1) / 1000;
      const events = Array.from({ length: 5 }, (_, i) => ({
        thing_key: 'exported',
        timestamp: (start + i * 60) * 1000,
        // The last holds a text with a line break: one CSV record over two lines.
        data: i === 4 ? { temperature: 20 + i, note: 'two\nlines' } : { temperature: 20 + i },
      }));
      assert.equal((await device.event({ events })).status, 200);
      const broken = succeeded(
        await runCli(exportArgs(start + 240, start + 240, join(folder, 'broken.csv'), '--format', 'csv')),
      );
      assert.match(broken.stderr, /export: 1 event written to /);
      const csvFile = join(folder, 'events.csv');
      const csv = succeeded(await runCli(exportArgs(start + 60, start + 3 * 60, csvFile, '--format', 'csv')));
      assert.match(csv.stderr, /export: 3 events written to /);
      const one = succeeded(await runCli(exportArgs(start, start, join(folder, 'one.ndjson'))));
      assert.match(one.stderr, /export: 1 event written to /);
      assert.doesNotMatch(one.stderr, /\b1 (events|lines|bytes)\b/, 'one of anything is said in the singular');
      assert.deepEqual(readFileSync(csvFile, 'utf8').trimEnd().split('\r\n'), [
        'timestamp,temperature',
        `${start + 60},21`,
        `${start + 120},22`,
        `${start + 180},23`,
      ]);
      const ndjson = succeeded(
        await runCli(['export', 'events', '--thing', 'exported', '--url', url, '--token', token]),
      );
      const lines = ndjson.stdout
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l));
      assert.deepEqual(
        lines.map((l) => l.data.temperature),
        [20, 21, 22, 23, 24],
      );
      assert.match(ndjson.stderr, /export: 5 events$/m);
      const unknown = await runCli(['export', 'events', '--thing', 'nothing-here', '--url', url, '--token', token]);
      assert.notEqual(unknown.code, 0);
      assert.match(unknown.stderr, /the server answered 404/);
      const help = succeeded(await runCli(['export', 'events', '--help']));
      assert.match(help.stdout, /--from <time>\s+first time: epoch seconds/);
      assert.doesNotMatch(help.stdout, /epoch ms/);
    });

    it('when a command runs on a terminal then it shows a progress bar', async () => {
      const file = join(folder, 'terminal.csv');
      writeFileSync(file, 'name\nOn a terminal\n');
      const imported = await runOnTerminal(['import', 'things', file, '--url', url, '--token', token], {});
      assert.match(imported, /import \[[█░]+\] 100% \| created 1, updated 0, failed 0/);
      const start = Date.UTC(2026, 0, 1) / 1000;
      const exported = await runOnTerminal(exportArgs(start, start + 4 * 60, join(folder, 'terminal.ndjson')), {});
      assert.match(exported, /export \[[█░]+\] 100% \| 5 events written to /);
    });

    if (store.name === 'postgres') {
      it('when backup is asked of a PostgreSQL store then it says to use pg_dump and exits non-zero', async () => {
        const result = await runCli(['backup', join(folder, 'copy.db')], env);
        assert.notEqual(result.code, 0);
        assert.match(result.stderr, /pg_dump/);
        // The store is one schema here: the example dumps that schema.
        assert.match(result.stderr, new RegExp(`pg_dump --format=custom --schema=${settings.databaseSchema} `));
      });
    } else {
      it('when backup copies the store while the server writes then a server started on the copy answers from it', async () => {
        const device = new Device(url, pair);
        for (let i = 0; i < 4; i++) assert.equal((await device.register({ thing_key: `busy-${i}` })).status, 200);
        let writing = true;
        let sent = 0;
        const writer = (async () => {
          while (writing) {
            const batch = Array.from({ length: 20 }, (_, i) => ({ thing_key: `busy-${i % 4}`, data: { n: sent + i } }));
            assert.equal((await device.event({ events: batch })).status, 200);
            sent += 20;
          }
        })();
        while (sent < 200) await new Promise((r) => setTimeout(r, 20));
        const copy = join(folder, 'copy.db');
        const backup = succeeded(await runCli(['backup', copy], env));
        writing = false;
        await writer;
        assert.match(backup.stdout, /^Backed up \d+ pages to .*copy\.db\.$/m);
        // The store and its copy hold sealed secrets: their owner's only, the store's log too.
        const mode = (file: string) => (statSync(file).mode & 0o777).toString(8);
        const storeFile = env.DATABASE_URL?.slice('sqlite:'.length) as string;
        assert.deepEqual([mode(copy), mode(storeFile), mode(`${storeFile}-wal`)], ['600', '600', '600']);
        const nowhere = await runCli(['backup', join(folder, 'other.db')], {
          ...env,
          DATABASE_URL: `sqlite:${join(folder, 'missing', 'store.db')}`,
        });
        assert.notEqual(nowhere.code, 0);
        assert.match(nowhere.stderr, /there is no SQLite store at .*missing/);
        const again = await runCli(['backup', copy], env);
        assert.notEqual(again.code, 0);
        assert.match(again.stderr, /exists already/);

        const raw = new BetterSqlite3(copy, { readonly: true });
        try {
          assert.equal(raw.pragma('integrity_check', { simple: true }), 'ok');
          const counted = raw.prepare('select count(*) as n from events').get() as { n: number };
          const kept = raw.prepare('select sum(event_count) as n from things').get() as { n: number };
          assert.equal(counted.n, kept.n, 'every event with the count its thing keeps: one commit');
          assert.ok(counted.n >= 200 && counted.n <= sent + 20, `${counted.n} of ${sent}`);
        } finally {
          raw.close();
        }
        const restored = await serveProcess({ ...env, DATABASE_URL: `sqlite:${copy}` });
        running.push(restored.child);
        const things = await call(restored.url, 'GET', '/api/v3/things', { token, query: { search: 'cli-1' } });
        assert.equal(things.status, 200, things.text);
        assert.equal(things.body.things[0].name, 'Pump 1');
        const busy = await call(restored.url, 'GET', '/api/v3/things/busy-0/events/export', { token });
        assert.equal(busy.status, 200, busy.text);
        assert.ok(busy.text.trimEnd().split('\n').length >= 50, busy.text.slice(0, 200));
      });
    }
  });
}
