/**
 * Serves the console, the web application at /console/ (docs/console.md), from the folder the build
 * writes it to. Its hashed assets are cached for a year; index.html, which names them, never without
 * asking again; any other path under /console/ is one of the application's pages and gets index.html.
 * Every answer carries a Content-Security-Policy that allows scripts, styles and connections only from
 * this server (no inline scripts).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { notFound } from '../core/errors.ts';

export const CONSOLE_PATH = '/console/';

export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const IMMUTABLE = 'public, max-age=31536000, immutable';

export async function registerConsole(app: FastifyInstance, dir: string): Promise<void> {
  // The front page is the console.
  app.get('/', { schema: { hide: true } }, (_request, reply) => reply.redirect(CONSOLE_PATH, 302));
  await app.register(
    async (scope) => {
      scope.addHook('onSend', (request, reply, payload, done) => {
        const immutable = request.url.startsWith(`${CONSOLE_PATH}assets/`) && reply.statusCode === 200;
        reply.header('cache-control', immutable ? IMMUTABLE : 'no-cache');
        reply.header('content-security-policy', CONTENT_SECURITY_POLICY);
        reply.header('x-content-type-options', 'nosniff');
        reply.header('referrer-policy', 'no-referrer');
        done(null, payload);
      });
      if (!existsSync(join(dir, 'index.html'))) {
        scope.get('/*', { schema: { hide: true } }, (_request, reply) =>
          reply
            .status(503)
            .type('text/plain; charset=utf-8')
            .send(`The console is not built (no index.html in ${dir}): run npm run build.\n`),
        );
        return;
      }
      await scope.register(fastifyStatic, {
        root: dir,
        prefix: '/',
        index: false,
        cacheControl: false,
        // Compressed copies written by the build are served to clients that accept them.
        preCompressed: true,
        schemaHide: true,
      });
      scope.setNotFoundHandler((request: FastifyRequest, reply: FastifyReply) => {
        // A missing asset is a 404; every other path is a page of the application, for GET and for
        // HEAD (the same answer without its body).
        const read = request.method === 'GET' || request.method === 'HEAD';
        if (request.url.startsWith(`${CONSOLE_PATH}assets/`) || !read) {
          throw notFound('file');
        }
        return reply.sendFile('index.html');
      });
    },
    { prefix: CONSOLE_PATH.slice(0, -1) },
  );
}
