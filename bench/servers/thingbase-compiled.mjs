// Thingbase as `npm start` runs it (compiled JavaScript in dist/), configured by the environment.
import { createServer } from '../../dist/app.js';
import { loadConfig } from '../../dist/core/config.js';

const server = await createServer(loadConfig({ ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn' }));
const address = await server.listen({ port: 0, host: '127.0.0.1' });
process.stdout.write(`READY ${address}\n`);
process.on('SIGTERM', () => server.close().then(() => process.exit(0)));
