/**
 * A TCP proxy in front of a database that can be made to hang: paused, it forwards nothing either way
 * and its connections stay open, as a database whose processes are stopped or whose network is stuck
 * looks to its clients. Needs no root, unlike stopping a cluster of one's own (support/faults.ts).
 */
import { once } from 'node:events';
import { type AddressInfo, connect, createServer, type Socket } from 'node:net';

export interface HangingProxy {
  port: number;
  /** Connections it has taken (not those refused while cut), since it started. */
  connections(): number;
  pause(): void;
  /** Drops every connection and refuses new ones, as a database restarting does, until resume(). */
  cut(): void;
  resume(): void;
  close(): Promise<void>;
}

export async function hangingProxy(target: { host: string; port: number }): Promise<HangingProxy> {
  const sockets = new Set<Socket>();
  let paused = false;
  let cut = false;
  let connections = 0;
  const server = createServer((client) => {
    if (cut) {
      client.destroy();
      return;
    }
    connections += 1;
    const upstream = connect(target);
    for (const [from, to] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      sockets.add(from);
      if (paused) from.pause();
      // Not pipe(): a pipe resumes its source when the destination drains, paused or not.
      from.on('data', (chunk) => to.write(chunk));
      from.on('error', () => to.destroy());
      from.on('close', () => {
        sockets.delete(from);
        to.destroy();
      });
    }
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as AddressInfo).port,
    connections: () => connections,
    pause: () => {
      paused = true;
      for (const socket of sockets) socket.pause();
    },
    cut: () => {
      cut = true;
      for (const socket of sockets) socket.destroy();
    },
    resume: () => {
      cut = false;
      paused = false;
      for (const socket of sockets) socket.resume();
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
