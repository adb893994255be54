import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { call } from '../support/http.ts';
import { freePort } from '../support/ports.ts';
import { cli, runCli, serveProcess, startField, startPassword, stopProcess } from '../support/process.ts';
import { STORES } from '../support/stores.ts';

/** Runs `thingbase serve` and lets the rest of its start-up message arrive. */
async function serve(env: Record<string, string>) {
  const server = await serveProcess(env);
  await new Promise((resolve) => setTimeout(resolve, 200));
  return { child: server.child, url: server.url, output: server.output() };
}

/** Holds a loopback port, as another program would, until `release` is called. */
async function takePort(): Promise<{ port: number; release: () => Promise<void> }> {
  const holder = createServer();
  holder.listen(0, '127.0.0.1');
  await once(holder, 'listening');
  const address = holder.address();
  if (!address || typeof address === 'string') throw new Error('no port');
  return { port: address.port, release: () => new Promise((resolve) => holder.close(() => resolve())) };
}

/** Settings of the store `settings` names, as environment variables. */
const storeEnv = (settings: { databaseUrl: string; databaseSchema?: string }): Record<string, string> => ({
  DATABASE_URL: settings.databaseUrl,
  ...(settings.databaseSchema ? { DATABASE_SCHEMA: settings.databaseSchema } : {}),
});

async function stop(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return child.exitCode;
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  await stopProcess(child);
  return exited;
}

describe('first start of thingbase serve', () => {
  it('when the store is empty then an admin is made and its password printed once, and it can sign in', async () => {
    const databaseUrl = `sqlite:${join(mkdtempSync(join(tmpdir(), 'thingbase-first-')), 'data', 'thingbase.db')}`;
    const first = await serve({ DATABASE_URL: databaseUrl });
    const password = startPassword(first.output);
    assert.ok(password, first.output);
    assert.match(startField(first.output, 'admin') ?? '', /^admin@localhost /);
    // With PORT=0 the message names the port the system chose, not port 0.
    const docs = startField(first.output, 'api_docs')?.replace(/\/docs$/, '');
    assert.equal(docs && new URL(docs).port, new URL(first.url).port, first.output);
    assert.doesNotMatch(first.output, /:0\//);
    const session = await call(first.url, 'POST', '/api_sign_in', { body: { email: 'admin@localhost', password } });
    assert.equal(session.status, 200, session.text);
    assert.equal(session.body.organisation.name, 'Default');
    const front = await call(first.url, 'GET', '/', { headers: { 'content-type': '' } });
    assert.equal(front.status, 302, 'the front page is the console');
    assert.equal(front.headers.location, '/console/');
    assert.equal(await stop(first.child), 0, 'SIGTERM shuts down cleanly');

    const second = await serve({ DATABASE_URL: databaseUrl });
    assert.doesNotMatch(second.output, /shown only this once/);
    const again = await call(second.url, 'POST', '/api_sign_in', { body: { email: 'admin@localhost', password } });
    assert.equal(again.status, 200, 'the same admin, kept across restarts');
    await stop(second.child);
  });

  it('when started on a terminal then the log is readable lines and the message names the console first', async (t) => {
    if (!existsSync('/usr/bin/script')) {
      if (process.env.CI) assert.fail('CI needs script (util-linux) for the terminal test');
      return t.skip('no /usr/bin/script to give the server a pseudo-terminal');
    }
    const databaseUrl = `sqlite:${join(mkdtempSync(join(tmpdir(), 'thingbase-tty-')), 'thingbase.db')}`;
    const quoted = [process.execPath, ...cli(['serve'])].map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ');
    // script(1) runs the server on a pseudo-terminal, as a person's `npm start` does.
    const child = spawn('/usr/bin/script', ['-qfec', quoted, '/dev/null'], {
      env: {
        ...process.env,
        PORT: '0',
        MQTT_PORT: '0',
        LOG_LEVEL: 'info',
        THINGBASE_PASSWORD_HASH_COST: '1024',
        DATABASE_URL: databaseUrl,
      },
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    let output = '';
    child.stdout.on('data', (chunk) => {
      output += chunk.toString();
    });
    try {
      await until(() => /listening on http/.test(output), 30_000);
    } finally {
      if (child.pid) process.kill(-child.pid, 'SIGTERM');
    }
    const lines = output.split(/\r?\n/).filter((line) => line.trim() !== '');
    assert.ok(!lines.some((line) => line.trimStart().startsWith('{')), `no JSON log line on a terminal:\n${output}`);
    assert.ok(
      lines.some((line) => /^\d\d:\d\d:\d\d INFO /.test(line)),
      `readable log lines:\n${output}`,
    );
    const ours = lines.findIndex((line) => line.startsWith('Console:'));
    assert.match(lines[ours] ?? '', /^Console: +http:\/\/127\.0\.0\.1:\d+\/$/, output);
    assert.match(lines[ours + 1] ?? '', /^API docs: +http:\/\/127\.0\.0\.1:\d+\/docs$/, output);
    assert.match(output, /Admin: +admin@localhost/);
    assert.match(output, /Password: +\S+ \(shown only this once\)/);
  });

  it('when the output is not a terminal then log lines are JSON, as LOG_FORMAT=pretty makes them readable', async () => {
    const databaseUrl = `sqlite:${join(mkdtempSync(join(tmpdir(), 'thingbase-json-')), 'thingbase.db')}`;
    const plain = await serve({ DATABASE_URL: databaseUrl, LOG_LEVEL: 'info' });
    await stop(plain.child);
    assert.match(plain.output, /^\{"level":30,/m, plain.output);
    // The start message too is a JSON line, not lines of text among them.
    assert.doesNotMatch(plain.output, /^(Console|API docs|Thingbase \S+ is listening)/m, plain.output);
    assert.match(startField(plain.output, 'console') ?? '', /^http:\/\/127\.0\.0\.1:\d+\/$/, plain.output);
    const pretty = await serve({ DATABASE_URL: databaseUrl, LOG_LEVEL: 'info', LOG_FORMAT: 'pretty' });
    await stop(pretty.child);
    assert.doesNotMatch(pretty.output, /^\{"level"/m, pretty.output);
    assert.match(pretty.output, /^\d\d:\d\d:\d\d INFO {2}Server listening at/m, pretty.output);
  });

  it('when THINGBASE_ADMIN_EMAIL and PASSWORD are set then that admin and organisation name are used', async () => {
    const databaseUrl = `sqlite:${join(mkdtempSync(join(tmpdir(), 'thingbase-first-')), 'thingbase.db')}`;
    const { child, url, output } = await serve({
      DATABASE_URL: databaseUrl,
      THINGBASE_ADMIN_EMAIL: 'ops@example.com',
      THINGBASE_ADMIN_PASSWORD: 'chosen password',
      THINGBASE_ORG_NAME: 'Plant 7',
    });
    try {
      assert.doesNotMatch(output, /shown only this once/);
      assert.doesNotMatch(output, /chosen password/);
      const session = await call(url, 'POST', '/api_sign_in', {
        body: { email: 'ops@example.com', password: 'chosen password' },
      });
      assert.equal(session.status, 200);
      assert.equal(session.body.organisation.name, 'Plant 7');
    } finally {
      await stop(child);
    }
  });

  it('when the database cannot be reached then the message names DATABASE_URL without its password', async () => {
    const port = await freePort();
    const result = await runCli(['serve'], { DATABASE_URL: `postgres://postgres:hunter2@127.0.0.1:${port}/test` });
    assert.notEqual(result.code, 0);
    assert.match(result.stderr, /cannot reach the database at postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/test/);
    assert.match(result.stderr, /check DATABASE_URL/);
    assert.doesNotMatch(result.stdout + result.stderr, /hunter2/);

    const sqlite = await runCli(['serve'], { DATABASE_URL: `sqlite:${process.execPath}/thingbase.db` });
    assert.notEqual(sqlite.code, 0);
    assert.match(sqlite.stderr, /cannot open the SQLite database .*: set DATABASE_URL/);
  });

  it('when MQTT_PORT is set and taken then the message says to change MQTT_PORT', async () => {
    const held = await takePort();
    try {
      const databaseUrl = `sqlite:${join(mkdtempSync(join(tmpdir(), 'thingbase-first-')), 'thingbase.db')}`;
      const result = await runCli(['serve'], { DATABASE_URL: databaseUrl, MQTT_PORT: String(held.port) });
      assert.notEqual(result.code, 0);
      assert.match(result.stderr, new RegExp(`MQTT_PORT ${held.port} is taken: set MQTT_PORT to a free port`));
    } finally {
      await held.release();
    }
  });

  it('when the default MQTT port is taken then the server runs without that listener and says so in a JSON log line', async () => {
    // 1883 is held here unless another broker already holds it: taken either way.
    const holder = createServer();
    const held = await new Promise<boolean>((resolve) => {
      holder.once('error', () => resolve(false));
      holder.listen(1883, '0.0.0.0', () => resolve(true));
    });
    try {
      const databaseUrl = `sqlite:${join(mkdtempSync(join(tmpdir(), 'thingbase-json-')), 'thingbase.db')}`;
      const { child, output } = await serve({ DATABASE_URL: databaseUrl, MQTT_PORT: '', LOG_LEVEL: 'info' });
      await stop(child);
      const lines = output.split('\n').filter((line) => line.trim() !== '');
      const messages = lines.map((line) => {
        assert.doesNotThrow(() => JSON.parse(line), `a line of plain text among the JSON log: ${line}`);
        return String(JSON.parse(line).msg ?? '');
      });
      assert.ok(
        messages.some((m) => /^MQTT_PORT 1883 is taken \(another broker\?\): running without that listener/.test(m)),
        output,
      );
    } finally {
      if (held) await new Promise((resolve) => holder.close(resolve));
    }
  });

  it('when the configuration is wrong then it exits with a clear message', async () => {
    await assert.rejects(
      serve({ DATABASE_URL: 'mysql://nope' }),
      /DATABASE_URL must start with sqlite: or postgres:\/\//,
    );
    await assert.rejects(serve({ PORT: 'eighty' }), /PORT must be a port number/);
  });
});

for (const store of STORES) {
  describe(`a first start that fails [${store.name}]`, { skip: store.skip }, () => {
    const made: { databaseUrl: string; databaseSchema?: string }[] = [];
    after(async () => {
      for (const settings of made) await store.dispose(settings);
    });

    it('when the HTTP port is taken then no admin is made, the message names PORT, and the next start prints the password', async () => {
      const settings = store.fresh();
      made.push(settings);
      const held = await takePort();
      let failed: Awaited<ReturnType<typeof runCli>>;
      try {
        failed = await runCli(['serve'], { ...storeEnv(settings), PORT: String(held.port) });
      } finally {
        await held.release();
      }
      assert.notEqual(failed.code, 0, failed.stdout);

      const next = await serve(storeEnv(settings));
      try {
        const password = startPassword(next.output);
        assert.ok(password, `the start after the failed one makes the admin and prints its password:\n${next.output}`);
        const session = await call(next.url, 'POST', '/api_sign_in', { body: { email: 'admin@localhost', password } });
        assert.equal(session.status, 200, session.text);
      } finally {
        await stop(next.child);
      }
      assert.match(failed.stderr, new RegExp(`PORT ${held.port} is taken: set PORT to a free port`));
    });
  });
}

async function until(done: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
