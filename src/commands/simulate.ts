/**
 * `thingbase simulate` (docs/simulator.md): simulated machines that send plausible readings to a running
 * server through the device interface, until stopped (Ctrl-C), with a progress line on a terminal.
 */
import type { Command } from 'commander';
import { request } from 'undici';
import { ConfigError, loadConfig } from '../core/config.ts';
import type { KeyPair } from '../simulator/device-link.ts';
import { SIMULATED_METRICS } from '../simulator/readings.ts';
import { Simulation, type SimulationCounts } from '../simulator/simulation.ts';
import { ask, refusalLine, TOKEN_OPTION } from './remote.ts';

export interface SimulateOptions {
  devices: string;
  rate: string;
  http?: boolean;
  mqtt?: boolean;
  template?: string;
  prefix: string;
  url?: string;
  mqttUrl?: string;
  token?: string;
  accessKey?: string;
  secretKey?: string;
}

export function addSimulateCommand(program: Command): void {
  program
    .command('simulate')
    .description(
      'simulated machines that register and send readings to a running server through the device interface, until stopped',
    )
    .option('--devices <n>', 'how many machines', '3')
    .option('--rate <r>', 'readings a second from each machine', '1')
    .option('--mqtt', 'send over MQTT (the default): instructions reach the machines, which acknowledge them')
    .option('--http', 'send over HTTP instead')
    .option(
      '--template <name>',
      'put the things in this template, made with their metrics when missing (needs --token)',
    )
    .option('--prefix <prefix>', 'thing keys are <prefix>-1 ... <prefix>-N', 'sim')
    .option('--url <url>', 'the server (default: PUBLIC_BASE_URL, or http://HOST:PORT of the environment)')
    .option('--mqtt-url <url>', "the server's MQTT address (default: the server's MQTT port, from its device settings)")
    .option('--token <token>', 'an API key or session token, to make a key pair (default: THINGBASE_TOKEN)')
    .option('--access-key <key>', "a key pair's access key, instead of making one")
    .option('--secret-key <key>', "that key pair's secret key")
    .action(async (options: SimulateOptions) => {
      await simulate(options);
    });
}

async function simulate(options: SimulateOptions): Promise<void> {
  const httpUrl = (options.url || loadConfig().publicBaseUrl).replace(/\/+$/, '');
  const token = options.token || process.env.THINGBASE_TOKEN || undefined;
  const devices = wholeNumber('--devices', options.devices);
  const rate = Number(options.rate);
  if (!/^\d+(\.\d+)?$/.test(options.rate) || !(rate > 0 && rate <= 100))
    throw new ConfigError(`--rate must be a number above 0 and at most 100 (got "${options.rate}")`);
  if (options.http && options.mqtt) throw new ConfigError('give --mqtt or --http, not both');
  const transport = options.http ? 'http' : 'mqtt';
  const api = token ? new Api(httpUrl, token) : undefined;
  // Where MQTT devices connect is settled before a key pair is made, so a server without a listener
  // leaves no unused key pair behind.
  const mqttUrl = transport === 'mqtt' ? (options.mqttUrl ?? (await mqttUrlOf(httpUrl, api))) : '';
  const { keys, made } = await keyPairOf(options, api);
  try {
    const register: Record<string, unknown> = {};
    if (options.template) {
      if (!api) throw new ConfigError(`--template needs ${TOKEN_OPTION} to find or make the template`);
      const templateKey = await templateOf(api, options.template);
      // A register cannot choose a template: the things are made in it first (an existing one is kept).
      for (let index = 1; index <= devices; index++) {
        await api.call(
          'POST',
          '/api/v3/things',
          {
            thing: {
              thing_key: `${options.prefix}-${index}`,
              name: `Simulated machine ${index}`,
              thing_template_key: templateKey,
              bi_directional: true,
            },
          },
          [409],
        );
      }
    }
    const simulation = new Simulation({
      devices,
      rate,
      transport,
      httpUrl,
      mqttUrl,
      keys,
      prefix: options.prefix,
      register,
    });
    const terminal = process.stdout.isTTY === true;
    process.stdout.write(
      `Simulating ${devices} machine(s) over ${transport.toUpperCase()}, ${rate} reading(s) a second each, as ${options.prefix}-1 ... ${options.prefix}-${devices}. Ctrl-C stops.\n`,
    );
    await simulation.start();
    const show = () => {
      const line = progressLine(simulation.counts);
      if (terminal) process.stdout.write(`\r${line}\u001b[K`);
      else process.stdout.write(`${line}\n`);
    };
    const progress = setInterval(show, terminal ? 500 : 10_000);
    await new Promise<void>((resolve) => {
      const stop = () => resolve();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
    clearInterval(progress);
    await simulation.stop();
    if (terminal) process.stdout.write('\n');
    process.stdout.write(`Stopped. ${progressLine(simulation.counts)}\n`);
  } finally {
    // A key pair it made goes with it, as the demo's does, however the run ends: runs would otherwise
    // leave one each.
    if (made && api) {
      const deleted = await api.call('DELETE', `/api/v3/key_pairs/${made.keyPairKey}`).then(
        () => true,
        (error: Error) => {
          process.stdout.write(`Could not delete the key pair ${made.name}: ${error.message}\n`);
          return false;
        },
      );
      if (deleted) process.stdout.write(`Deleted the key pair ${made.name}.\n`);
    }
  }
}

export function progressLine(counts: SimulationCounts): string {
  const parts = [
    `${counts.devices} machine(s)`,
    `${counts.sent} readings sent`,
    `${counts.accepted} stored`,
    `${counts.refused} refused`,
    `${counts.instructions} instruction(s) acknowledged`,
  ];
  return parts.join(' · ') + (counts.lastRefusal ? ` (last refusal: ${counts.lastRefusal})` : '');
}

function wholeNumber(name: string, text: string): number {
  const value = Number(text);
  if (!/^\d+$/.test(text) || value < 1 || value > 10_000)
    throw new ConfigError(`${name} must be a whole number from 1 to 10000 (got "${text}")`);
  return value;
}

class Api {
  constructor(
    readonly url: string,
    private readonly token: string,
  ) {}

  /** The answer's body; a status in `accepted` gives undefined, any other refusal throws its message. */
  async call<T>(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown, accepted: number[] = []): Promise<T> {
    const answer = await ask(this.url, () =>
      request(`${this.url}${path}`, {
        method,
        // A content type without a body (a DELETE) would be a 400: an empty JSON body.
        headers: { 'x-auth-token': this.token, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      }),
    );
    const text = await answer.body.text();
    if (answer.statusCode === 200) return JSON.parse(text) as T;
    if (accepted.includes(answer.statusCode)) return undefined as T;
    // Which of its requests was refused: simulate makes several.
    throw new ConfigError(`${method} ${path}: ${refusalLine(answer.statusCode, text)}`);
  }
}

/** The key pair to sign with, and the one it made (name and key) when none was given. */
async function keyPairOf(
  options: SimulateOptions,
  api: Api | undefined,
): Promise<{ keys: KeyPair; made?: { name: string; keyPairKey: string } }> {
  if (options.accessKey || options.secretKey) {
    if (!options.accessKey || !options.secretKey) throw new ConfigError('give both --access-key and --secret-key');
    return { keys: { accessKey: options.accessKey, secretKey: options.secretKey } };
  }
  if (!api)
    throw new ConfigError(`a key pair is needed: --access-key and --secret-key, or ${TOKEN_OPTION} to make one`);
  const made = await api.call<{
    key_pair: { name: string; key_pair_key: string; access_key: string; secret_key: string };
  }>('POST', '/api/v3/key_pairs', {
    key_pair: { name: `Simulator ${new Date().toISOString()}` },
  });
  process.stdout.write(`Made the key pair ${made.key_pair.name} (access key ${made.key_pair.access_key}).\n`);
  return {
    keys: { accessKey: made.key_pair.access_key, secretKey: made.key_pair.secret_key },
    made: { name: made.key_pair.name, keyPairKey: made.key_pair.key_pair_key },
  };
}

async function templateOf(api: Api, name: string): Promise<string> {
  type Template = { name: string; thing_template_key: string };
  const found = await api.call<{ thing_templates: Template[] }>(
    'GET',
    `/api/v3/thing_templates?search=${encodeURIComponent(name)}&per=100`,
  );
  const same = found.thing_templates.find((t) => t.name === name);
  if (same) return same.thing_template_key;
  const made = await api.call<{ thing_template: Template }>('POST', '/api/v3/thing_templates', {
    thing_template: { name, description: 'Made by thingbase simulate', metrics: SIMULATED_METRICS },
  });
  return made.thing_template.thing_template_key;
}

/** The embedded broker's port from the server's device settings, else 1883, on the server's host. */
async function mqttUrlOf(httpUrl: string, api: Api | undefined): Promise<string> {
  const host = new URL(httpUrl).hostname;
  if (!api) return `mqtt://${host}:1883`;
  const { device_settings: settings } = await api.call<{
    device_settings: { mqtt_port: number | null; external_broker: boolean };
  }>('GET', '/api/v3/device_settings');
  if (settings.external_broker)
    throw new ConfigError(
      'the server serves devices through an external MQTT broker: give its address with --mqtt-url',
    );
  // MQTT_PORT=0, or its default port taken by another broker when the server started.
  if (settings.mqtt_port === null)
    throw new ConfigError('the server has no MQTT listener: set MQTT_PORT on the server, or use --http');
  return `mqtt://${host}:${settings.mqtt_port}`;
}
