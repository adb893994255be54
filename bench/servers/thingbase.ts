// Thingbase itself, configured by the environment the benchmark passes, on a loopback port.
import { createServer } from '../../src/app.ts';
import { loadConfig } from '../../src/core/config.ts';

const server = await createServer(loadConfig({ ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn' }));
const address = await server.app.listen({ port: 0, host: '127.0.0.1' });
process.stdout.write(`READY ${address}\n`);
process.on('SIGTERM', () => server.close().then(() => process.exit(0)));
