/**
 * `npm run bench -- ingest [--store sqlite|postgres] [--duration 10] [--rounds 1] [--devices 200]
 * [--inflight 10] [--only single,bulk,mqtt,mqtt5] [--rules 0]`
 * Event ingestion through the device interface, each figure next to a baseline measured in the same
 * run: the same rows written straight into the store in transactions of 1,000.
 * - single: one signed HTTP event per request (100 connections).
 * - bulk: signed HTTP bulks of 1,000 events (8 connections).
 * - mqtt: QoS 1 messages in the SDK envelope with `hash`, 3 metrics each, from many devices, each
 *   message counted when its httpAck (sent after commit) arrives; the devices are raw sockets with
 *   pre-encoded packets (mqtt-load.ts), so the generator costs little CPU. `mqtt` speaks MQTT 3.1.1,
 *   `mqtt5` the same with MQTT 5; with both, the run also gives their ratio, of each round.
 * - mqtt-floor (only when named in `--only`): the `mqtt` load against the fleet benchmark's floor
 *   (bench/servers/mqtt-floor.ts, SQLite), in its own process: what any Node server reaches on this
 *   machine when it checks, stores and answers each message and does nothing else. Its ratio to the
 *   baseline is the most an MQTT ingest can reach here; with `mqtt`, the run also gives their ratio.
 * Rounds take the scenarios in turn (a round of each, then the next round), so that the machine's
 * moods fall on all of them alike.
 * The server runs compiled, in its own process. Besides throughput each row gives the CPU time per
 * event of the server (from /proc) and of the load generator (this process), and the server's peak RSS.
 * With several rounds, figures are medians (peak RSS the maximum).
 * With `--rules N`, N rules watch every thing (half `on_enter` with `for_seconds` and `auto_clear`,
 * half `every_event`; their conditions do not hold for the readings, as for most real events), and
 * each scenario runs in turns with the rules disabled and enabled: the rows with rules also give their
 * ratio to the same scenario without them, measured in the same round.
 */
import { openStore, type Store } from '../src/store/store.ts';
import { type MqttLevel, mqttLoad } from './mqtt-load.ts';
import {
  BENCH_ADMIN,
  benchMqttPort,
  benchStore,
  cpuSeconds,
  describeMachine,
  type KeyPair,
  load,
  median,
  mqttEnvelope,
  option,
  postJson,
  rssMiB,
  sign,
  startFloor,
  startThingbase,
  table,
} from './support.ts';

export async function run(args: string[]): Promise<void> {
  const store = option(args, 'store', 'sqlite');
  const duration = Number(option(args, 'duration', '10'));
  const devices = Number(option(args, 'devices', '200'));
  const inflight = Number(option(args, 'inflight', '10'));
  const rounds = Number(option(args, 'rounds', '1'));
  const only = option(args, 'only', 'single,bulk,mqtt,mqtt5').split(',');
  const ruleCount = Number(option(args, 'rules', '0'));
  const bench = benchStore(store);
  const mqttPort = benchMqttPort();
  console.log(
    `ingest benchmark: ${describeMachine()}; store ${store}; ${duration}s per run; MQTT ${devices} devices x ${inflight} in flight; ${ruleCount} active rules`,
  );

  const server = await startThingbase(bench, mqttPort);
  let floorPort = benchMqttPort();
  while (floorPort === mqttPort) floorPort = benchMqttPort();
  const floor = only.includes('mqtt-floor') ? await startFloor(floorPort) : undefined;
  /** The server the scenario under way loads: its CPU and RSS are measured. */
  let measuredPid = server.pid;
  let peakRss = 0;
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, rssMiB(measuredPid));
  }, 100);
  const rows: (string | number)[][] = [
    ['what', 'events/s', 'vs baseline', 'requests/s', 'CPU us/event server / generator', 'server peak RSS MiB'],
  ];
  try {
    const { auth_token: token } = await postJson(server.url, '/api_sign_in', BENCH_ADMIN);
    const { key_pair: pair } = await postJson(
      server.url,
      '/api/v3/key_pairs',
      { key_pair: { name: 'bench' } },
      { 'x-auth-token': token },
    );
    // Rules watching every thing, evaluated on every event (half on_enter with for_seconds and
    // auto_clear and their stored state, half every_event); their conditions do not hold for the
    // benchmark's readings, as for most real events. Created disabled: each round enables them in turn.
    const ruleKeys: string[] = [];
    for (let i = 0; i < ruleCount; i++) {
      const timed = i % 2 === 0;
      const rule = {
        name: `bench rule ${i}`,
        condition: `temperature > ${100 + i} or (pressure < 0 and rpm > ${i})`,
        trigger: timed ? 'on_enter' : 'every_event',
        ...(timed ? { for_seconds: 60, auto_clear: true } : {}),
        alert_type: 1,
        enabled: false,
      };
      const created = await postJson(server.url, '/api/v3/rules', { rule }, { 'x-auth-token': token });
      if (!created.rule) throw new Error(`cannot create a rule: ${JSON.stringify(created)}`);
      ruleKeys.push(created.rule.rule_key);
    }
    const enableRules = async (enabled: boolean) => {
      for (const key of ruleKeys) {
        const response = await fetch(`${server.url}/api/v3/rules/${key}`, {
          method: 'PUT',
          headers: { 'content-type': 'application/json', 'x-auth-token': token },
          body: JSON.stringify({ rule: { enabled } }),
        });
        if (response.status !== 200) throw new Error(`cannot switch a rule: ${await response.text()}`);
      }
    };
    const things = Array.from({ length: devices }, (_, i) => `bench-${i}`);
    for (const thing_key of things) {
      const body = JSON.stringify({ thing_key });
      await fetch(`${server.url}/api/v3/things/register.json`, {
        method: 'POST',
        headers: { 'x-access-key': pair.access_key, 'x-dtn-signature': sign(pair.secret_key, body) },
        body,
      });
    }

    // Baseline: the same rows straight into the store, 1,000 per transaction.
    const direct = await openStore({
      databaseUrl: bench.databaseUrl,
      schema: bench.engine === 'postgres' ? bench.schema : undefined,
      sqliteSynchronous: process.env.SQLITE_SYNCHRONOUS === 'NORMAL' ? 'NORMAL' : 'FULL',
    });
    const thingIds = (await direct.db.selectFrom('things').select('thing_id').execute()).map((r) => Number(r.thing_id));
    const baselines: number[] = [];
    for (let round = 0; round < rounds; round++) baselines.push(await directInserts(direct, thingIds));
    await direct.close();
    const baseline = median(baselines);
    rows.push([
      'baseline: direct inserts, 1,000 per transaction',
      Math.round(baseline),
      '1.00x',
      '-',
      '-',
      '-',
      ...(ruleCount > 0 ? ['-'] : []),
    ]);
    if (ruleCount > 0) rows[0]?.push('vs no rules');

    const scenarios: Record<string, Scenario> = {
      single: {
        label: 'HTTP, signed, 1 event per request',
        perRequest: 1,
        measure: () => httpLoad(server.url, pair, singleBody(things), 100, duration),
      },
      bulk: {
        label: 'HTTP, signed, bulks of 1,000 events',
        perRequest: 1000,
        measure: () => httpLoad(server.url, pair, bulkBody(things), 8, duration),
      },
      mqtt: {
        label: `MQTT 3.1.1 QoS 1, ${devices} devices x ${inflight} in flight, acknowledged`,
        perRequest: 1,
        measure: () => mqttThroughput(4),
      },
      mqtt5: {
        label: `MQTT 5 QoS 1, ${devices} devices x ${inflight} in flight, acknowledged`,
        perRequest: 1,
        measure: () => mqttThroughput(5),
      },
      'mqtt-floor': {
        label: `the floor (bench/servers/mqtt-floor.ts), MQTT 3.1.1 QoS 1, ${devices} devices x ${inflight} in flight`,
        perRequest: 1,
        pid: floor?.server.pid,
        measure: () => {
          if (!floorTarget) throw new Error('the floor was not started');
          return mqttThroughput(4, floorTarget);
        },
      },
    };
    /** Each thing's device, its message signed with `keyPair`: made before any load, outside its CPU. */
    const devicesOf = (keyPair: KeyPair) =>
      things.map((thingKey, i) => ({
        clientId: `bench${String(i).padStart(5, '0')}`,
        payload: mqttEnvelope(
          keyPair,
          JSON.stringify({ thing_key: thingKey, data: { temperature: 21.5, pressure: 1.5, rpm: 1200 } }),
        ),
      }));
    const thingbaseTarget = { port: mqttPort, keyPair: pair, devices: devicesOf(pair) };
    const floorTarget = floor && { port: floorPort, keyPair: floor.keyPair, devices: devicesOf(floor.keyPair) };
    async function mqttThroughput(level: MqttLevel, target = thingbaseTarget): Promise<Throughput> {
      const result = await mqttLoad({
        port: target.port,
        username: target.keyPair.access_key,
        password: sign(target.keyPair.secret_key, target.keyPair.access_key),
        devices: target.devices,
        inflight,
        duration,
        level,
      });
      if (result.refused > 0) throw new Error(`MQTT: ${result.refused} refused acknowledgements`);
      return { requests: result.acknowledged, seconds: result.seconds };
    }
    const chosen = only.map((name) => {
      const scenario = scenarios[name];
      if (!scenario) throw new Error(`unknown scenario ${name}; choose from ${Object.keys(scenarios).join(', ')}`);
      return { name, scenario, withoutRules: [] as Measured[], measured: [] as Measured[] };
    });
    const once = async (scenario: Scenario): Promise<Measured> => {
      measuredPid = scenario.pid ?? server.pid;
      peakRss = 0;
      const serverBefore = cpuSeconds(measuredPid);
      const generatorBefore = process.cpuUsage();
      const { requests, seconds } = await scenario.measure();
      const generator = process.cpuUsage(generatorBefore);
      const events = requests * scenario.perRequest;
      return {
        eventsPerSecond: events / seconds,
        requestsPerSecond: requests / seconds,
        serverCpu: ((cpuSeconds(measuredPid) - serverBefore) / events) * 1e6,
        generatorCpu: (generator.user + generator.system) / events,
        rss: peakRss,
      };
    };
    for (let round = 0; round < rounds; round++) {
      for (const { scenario, withoutRules, measured } of chosen) {
        // With rules: each round measures without them, then with them, so each ratio is of one round.
        if (ruleCount > 0) {
          await enableRules(false);
          withoutRules.push(await once(scenario));
          await enableRules(true);
        }
        measured.push(await once(scenario));
      }
    }
    for (const { scenario, withoutRules, measured } of chosen) {
      const row = (label: string, list: Measured[], vsNoRules?: string) => {
        const m = (pick: (x: Measured) => number) => median(list.map(pick));
        rows.push([
          label,
          Math.round(m((x) => x.eventsPerSecond)),
          `${(m((x) => x.eventsPerSecond) / baseline).toFixed(2)}x`,
          Math.round(m((x) => x.requestsPerSecond)),
          `${m((x) => x.serverCpu).toFixed(1)} / ${m((x) => x.generatorCpu).toFixed(1)}`,
          Math.round(Math.max(...list.map((x) => x.rss))),
          ...(vsNoRules === undefined ? [] : [vsNoRules]),
        ]);
      };
      if (ruleCount === 0) {
        row(scenario.label, measured);
        continue;
      }
      row(`${scenario.label}, no rules`, withoutRules, '1.00x');
      const ratios = measured.map((x, i) => x.eventsPerSecond / (withoutRules[i] as Measured).eventsPerSecond);
      row(`${scenario.label}, ${ruleCount} rules`, measured, `${median(ratios).toFixed(2)}x`);
    }
    console.log(table(rows));
    const v3 = chosen.find((c) => c.name === 'mqtt');
    const v5 = chosen.find((c) => c.name === 'mqtt5');
    const ratioLine = (
      what: string,
      of: (typeof chosen)[number] | undefined,
      to: (typeof chosen)[number] | undefined,
    ) => {
      if (!of || !to) return;
      const ratios = of.measured.map((x, i) => x.eventsPerSecond / (to.measured[i] as Measured).eventsPerSecond);
      console.log(
        `${what} events/s: ${median(ratios).toFixed(3)}x (median of ${rounds} rounds: ${ratios.map((r) => r.toFixed(3)).join(', ')})`,
      );
    };
    ratioLine('MQTT 5 / MQTT 3.1.1', v5, v3);
    ratioLine(
      'MQTT 3.1.1 / the floor',
      v3,
      chosen.find((c) => c.name === 'mqtt-floor'),
    );
  } finally {
    clearInterval(sampler);
    await floor?.server.stop();
    await server.stop();
    await bench.dispose();
  }
}

interface Scenario {
  label: string;
  /** The server it loads, when not Thingbase (the floor). */
  pid?: number | undefined;
  /** Events in each request it counts. */
  perRequest: number;
  measure: () => Promise<Throughput>;
}

interface Throughput {
  requests: number;
  seconds: number;
}

interface Measured {
  eventsPerSecond: number;
  requestsPerSecond: number;
  /** Microseconds of CPU per event. */
  serverCpu: number;
  generatorCpu: number;
  rss: number;
}

/** Rows per second written straight into the store, 200,000 rows in transactions of 1,000. */
async function directInserts(direct: Store, thingIds: number[]): Promise<number> {
  const baselineRows = 200_000;
  const started = performance.now();
  for (let i = 0; i < baselineRows; i += 1000) {
    const now = Date.now();
    await direct.transaction(async (tx) => {
      for (let j = 0; j < 1000; j += 500) {
        await tx
          .insertInto('events')
          .values(
            Array.from({ length: 500 }, (_, k) => ({
              thing_id: thingIds[(i + j + k) % thingIds.length] as number,
              timestamp: now,
              created_at: now,
              data: JSON.stringify({ temperature: 20 + ((i + k) % 50), pressure: 1.5, rpm: 1200 }),
              waypoint: null,
            })),
          )
          .execute();
      }
    });
  }
  return baselineRows / ((performance.now() - started) / 1000);
}

const singleBody = (things: string[]) =>
  JSON.stringify({ thing_key: things[0], data: { temperature: 21.5, pressure: 1.5, rpm: 1200 } });

const bulkBody = (things: string[]) =>
  JSON.stringify({
    events: Array.from({ length: 1000 }, (_, i) => ({
      thing_key: things[i % things.length],
      data: { temperature: 20 + (i % 50), pressure: 1.5, rpm: 1200 },
    })),
  });

async function httpLoad(
  url: string,
  pair: KeyPair,
  body: string,
  connections: number,
  duration: number,
): Promise<Throughput> {
  const started = performance.now();
  const result = await load({
    url: `${url}/api/v3/things/event.json`,
    method: 'POST',
    duration,
    connections,
    headers: {
      'content-type': 'application/json',
      'x-access-key': pair.access_key,
      'x-dtn-signature': sign(pair.secret_key, body),
    },
    body,
  });
  if (result.non2xx > 0 || result.errors > 0)
    throw new Error(`HTTP: ${result.non2xx} non-2xx answers, ${result.errors} errors`);
  const seconds = (performance.now() - started) / 1000;
  return { requests: result.requestsPerSecond * seconds, seconds };
}
