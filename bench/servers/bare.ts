// The baseline: a bare Fastify route answering a small JSON object.
import Fastify from 'fastify';

const app = Fastify({ logger: false });
app.get('/hello', async () => ({ hello: 'world' }));
const address = await app.listen({ port: 0, host: '127.0.0.1' });
process.stdout.write(`READY ${address}\n`);
process.on('SIGTERM', () => app.close().then(() => process.exit(0)));
