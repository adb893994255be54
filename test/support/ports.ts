/** A TCP port free on loopback right now, for servers that cannot listen on port 0 themselves. */
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';

export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
