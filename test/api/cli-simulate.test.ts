/**
 * `thingbase simulate` as its own process against a real server: simulated machines register and send
 * readings over MQTT and over HTTP, acknowledge an instruction, and stop cleanly on SIGINT; against a
 * server without an MQTT listener, MQTT is refused before a key pair is made, and HTTP still works.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { after, it } from 'node:test';
import { userWithAbilities } from '../support/fixtures.ts';
import { eventually } from '../support/peers.ts';
import { freePort } from '../support/ports.ts';
import { cli } from '../support/process.ts';
import { describeOnStores, type SuiteContext } from '../support/suites.ts';

/** Runs simulators against the suite's server, and counts a thing's stored events. */
function simulator(ctx: SuiteContext) {
  const running = new Set<ChildProcess>();
  after(() => {
    for (const child of running) child.kill('SIGKILL');
  });

  /** Starts the simulator; `stop` sends SIGINT and resolves with its exit code and output. */
  function simulate(args: string[], token: string) {
    const child = spawn(process.execPath, cli(['simulate', '--url', ctx.api.url, '--token', token, ...args]), {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    running.add(child);
    const exited = new Promise<number | null>((resolve) =>
      child.once('exit', (code) => {
        running.delete(child);
        resolve(code);
      }),
    );
    return {
      output: () => output,
      exited,
      stop: async () => {
        child.kill('SIGINT');
        return { code: await exited, output };
      },
    };
  }

  async function eventCount(token: string, thingKey: string): Promise<number> {
    const answer = await ctx.api.request('POST', '/api/v3/query/thing_data', {
      token,
      body: { thing_key: thingKey, per: 1 },
    });
    if (answer.status === 404) return 0; // not registered yet
    assert.equal(answer.status, 200, answer.text);
    return (answer.body[thingKey]?.total_event_count as number | undefined) ?? 0;
  }

  return { simulate, eventCount };
}

describeOnStores(
  'thingbase simulate',
  (ctx) => {
    const { simulate, eventCount } = simulator(ctx);

    it('when simulating over MQTT then three machines store readings, acknowledge an instruction and stop on SIGINT', async () => {
      const token = await ctx.api.adminToken();
      const run = simulate(['--devices', '3', '--rate', '5', '--prefix', 'mq', '--template', 'Simulated press'], token);
      await eventually(async () => {
        for (const key of ['mq-1', 'mq-2', 'mq-3']) if ((await eventCount(token, key)) < 3) return false;
        return true;
      }, 'readings of the three machines');
      const thing = await ctx.api.request('GET', '/api/v3/things/mq-2', { token });
      assert.equal(thing.body.thing.thing_template_name, 'Simulated press');
      assert.equal(thing.body.thing.bi_directional, true);
      assert.equal(typeof thing.body.thing.last_event.data.temperature, 'number');
      assert.equal(thing.body.thing.coordinates.length, 2, 'the waypoint moves the thing');

      const sent = await ctx.api.request('POST', '/api/v3/things/mq-2/instructions', {
        token,
        body: { instruction: { name: 'Slow down', definition: { speed: 2 } } },
      });
      assert.equal(sent.status, 200, sent.text);
      const instructionKey = sent.body.instruction.instruction_key as string;
      await eventually(async () => {
        const one = await ctx.api.request('GET', `/api/v3/things/mq-2/instructions/${instructionKey}`, { token });
        return one.body.instruction.status === 'acknowledged';
      }, 'the instruction acknowledged');

      const { code, output } = await run.stop();
      assert.equal(code, 0, output);
      assert.match(
        output,
        /Stopped\. 3 machine\(s\) · \d+ readings sent · \d+ stored · 0 refused · 1 instruction\(s\) acknowledged/,
      );
      const [, sentCount, storedCount] = /(\d+) readings sent · (\d+) stored/.exec(output) ?? [];
      assert.equal(sentCount, storedCount, 'every reading sent was answered and stored before it stopped');
      let stored = 0;
      for (const key of ['mq-1', 'mq-2', 'mq-3']) stored += await eventCount(token, key);
      assert.equal(stored, Number(storedCount), 'what it counts as stored is stored');
    });

    it('when simulating over HTTP then the readings are stored, and a bad option is refused before anything is sent', async () => {
      const token = await ctx.api.adminToken();
      const run = simulate(['--devices', '2', '--rate', '5', '--http', '--prefix', 'web'], token);
      await eventually(
        async () => (await eventCount(token, 'web-1')) >= 3 && (await eventCount(token, 'web-2')) >= 3,
        'readings',
      );
      const { code, output } = await run.stop();
      assert.equal(code, 0, output);
      assert.match(output, /over HTTP/);
      // The key pair it made goes with it: runs do not leave one each.
      const name = /Made the key pair (Simulator \S+) \(/.exec(output)?.[1];
      assert.ok(name, output);
      assert.match(output, new RegExp(`Deleted the key pair ${name.replace(/[.]/g, '\\.')}\\.`));
      const pairs = await ctx.api.request('GET', '/api/v3/key_pairs', { token, query: { per: 1000 } });
      assert.deepEqual(
        (pairs.body.key_pairs as { name: string }[]).filter((pair) => pair.name === name),
        [],
      );

      const bad = simulate(['--devices', '0x10'], token);
      const refused = await bad.exited;
      assert.equal(refused, 1, bad.output());
      assert.match(bad.output(), /--devices must be a whole number from 1 to 10000 \(got "0x10"\)/);
    });
  },
  { env: async () => ({ MQTT_PORT: String(await freePort()) }) },
);

// The suites' servers run without an MQTT listener unless given MQTT_PORT (test/support/server.ts).
describeOnStores('thingbase simulate against a server without an MQTT listener', (ctx) => {
  const { simulate, eventCount } = simulator(ctx);

  it('when simulating over MQTT then it says how to give the server a listener, before making a key pair', async () => {
    const token = await ctx.api.adminToken();
    const run = simulate(['--devices', '1', '--prefix', 'nolistener'], token);
    assert.equal(await run.exited, 1, run.output());
    assert.match(run.output(), /the server has no MQTT listener: set MQTT_PORT on the server, or use --http/);
    const keyPairs = await ctx.api.request('GET', '/api/v3/key_pairs', { token });
    assert.equal(keyPairs.status, 200, keyPairs.text);
    assert.deepEqual(
      (keyPairs.body.key_pairs as { name: string }[]).filter((pair) => pair.name.startsWith('Simulator ')),
      [],
      'no key pair was made for a simulation that could not start',
    );
  });

  it('when the simulation fails after making its key pair then the key pair is deleted all the same', async () => {
    const admin = await ctx.api.adminToken();
    // May make key pairs and things, and read templates, but not make the template it is asked for.
    const user = await userWithAbilities(ctx.api, admin, [15, 21, 92, 122, 135]);
    const run = simulate(['--devices', '1', '--http', '--prefix', 'refused', '--template', 'Never made'], user.token);
    assert.equal(await run.exited, 1, run.output());
    const name = /Made the key pair (Simulator \S+) \(/.exec(run.output())?.[1];
    assert.ok(name, run.output());
    assert.match(run.output(), /the server answered 403/);
    assert.ok(run.output().includes(`Deleted the key pair ${name}.`), run.output());
    const pairs = await ctx.api.request('GET', '/api/v3/key_pairs', { token: admin, query: { per: 1000 } });
    assert.deepEqual(
      (pairs.body.key_pairs as { name: string }[]).filter((pair) => pair.name === name),
      [],
    );
  });

  it('when simulating over HTTP then the readings are stored', async () => {
    const token = await ctx.api.adminToken();
    const run = simulate(['--devices', '1', '--rate', '5', '--http', '--prefix', 'plain'], token);
    await eventually(async () => (await eventCount(token, 'plain-1')) >= 2, 'readings');
    const { code, output } = await run.stop();
    assert.equal(code, 0, output);
  });
});
