/**
 * An MQTT broker for one test file alone. Every Thingbase instance subscribed to a broker gets a copy
 * of each device message (shared subscriptions share within a group, and each instance of another
 * store has a group of its own), and one that does not know the message's key pair answers it 401 on
 * the device's `httpAck` topic. On the machine's shared Mosquitto, an instance started at the same
 * time by another test file (or another run) can answer first. So a suite that checks devices'
 * answers through an external broker starts a Mosquitto of its own on a free port when the binary is
 * installed, and uses TEST_MQTT_URL or the shared one on 127.0.0.1:1883 otherwise.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from './ports.ts';

const MOSQUITTO_BINARY = ['/usr/sbin/mosquitto', '/usr/bin/mosquitto', '/usr/local/sbin/mosquitto'].find(existsSync);

export interface TestBroker {
  url: string;
  stop(): Promise<void>;
}

const reachable = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect({ host: '127.0.0.1', port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });

export async function testBroker(): Promise<TestBroker> {
  const shared = { url: process.env.TEST_MQTT_URL ?? 'mqtt://127.0.0.1:1883', stop: async () => {} };
  if (process.env.TEST_MQTT_URL || !MOSQUITTO_BINARY) return shared;
  const port = await freePort();
  const child: ChildProcess = spawn(MOSQUITTO_BINARY, ['-p', String(port)], { stdio: 'ignore' });
  // It ends with the test file's process however that ends, and keeps no test waiting.
  child.unref();
  process.once('exit', () => child.kill('SIGKILL'));
  const stop = async () => {
    if (child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.ref();
    child.kill('SIGTERM');
    await exited;
  };
  for (let i = 0; i < 100; i++) {
    if (await reachable(port)) return { url: `mqtt://127.0.0.1:${port}`, stop };
    if (child.exitCode !== null) break;
    await sleep(50);
  }
  // It did not start (the port taken meanwhile, say): the shared broker it is.
  await stop();
  return shared;
}
