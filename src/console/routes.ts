/**
 * Serves the console, the web application at /console/ (docs/console.md), from the folder the build
 * writes it to. Its hashed assets are cached for a year; index.html, which names them, never without
 * asking again; any other path under /console/ is one of the application's pages and gets index.html.
 * Every answer carries a Content-Security-Policy that allows scripts, styles and connections only from
 * this server (no inline scripts), and images from it and from the map tile server when MAP_TILE_URL
 * names one; the page then names the tiles in a meta element the map widget reads.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../core/config.ts';
import { notFound } from '../core/errors.ts';

export const CONSOLE_PATH = '/console/';

/** The origin images may come from for tiles: a `{s}` subdomain is any subdomain. */
export function tileOrigin(url: string): string {
  const parsed = new URL(url.replaceAll(/\{[xyz]\}/g, '0').replace('{s}.', 'subdomain.'));
  const host = url.includes('{s}.') ? parsed.host.replace(/^subdomain\./, '*.') : parsed.host;
  return `${parsed.protocol}//${host}`;
}

export function contentSecurityPolicy(mapTiles?: Config['mapTiles']): string {
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    `img-src 'self' data:${mapTiles ? ` ${tileOrigin(mapTiles.url)}` : ''}`,
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

const escapeAttribute = (text: string) =>
  text.replaceAll('&', '&amp;').replaceAll('"', '&quot;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');

/** index.html naming the map tiles for the console (docs/console.md, "Dashboards"). */
async function pageWithTiles(dir: string, mapTiles: NonNullable<Config['mapTiles']>): Promise<string> {
  const page = await readFile(join(dir, 'index.html'), 'utf8');
  const metas =
    `<meta name="thingbase-map-tile-url" content="${escapeAttribute(mapTiles.url)}" />` +
    `<meta name="thingbase-map-tile-attribution" content="${escapeAttribute(mapTiles.attribution)}" />`;
  return page.includes('</head>')
    ? page.replace('</head>', `${metas}</head>`)
    : page.replace(/^(<!doctype html>)?/i, `$1${metas}`);
}

const IMMUTABLE = 'public, max-age=31536000, immutable';

export async function registerConsole(app: FastifyInstance, dir: string, mapTiles?: Config['mapTiles']): Promise<void> {
  const policy = contentSecurityPolicy(mapTiles);
  // The front page is the console.
  app.get('/', { schema: { hide: true } }, (_request, reply) => reply.redirect(CONSOLE_PATH, 302));
  await app.register(
    async (scope) => {
      scope.addHook('onSend', (request, reply, payload, done) => {
        const immutable = request.url.startsWith(`${CONSOLE_PATH}assets/`) && reply.statusCode === 200;
        reply.header('cache-control', immutable ? IMMUTABLE : 'no-cache');
        reply.header('content-security-policy', policy);
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
      scope.setNotFoundHandler(async (request: FastifyRequest, reply: FastifyReply) => {
        // A missing asset is a 404; every other path is a page of the application, for GET and for
        // HEAD (the same answer without its body).
        const read = request.method === 'GET' || request.method === 'HEAD';
        if (request.url.startsWith(`${CONSOLE_PATH}assets/`) || !read) {
          throw notFound('file');
        }
        if (!mapTiles) return reply.sendFile('index.html');
        // Read at each answer, as sendFile does: a rebuilt console names new assets.
        return reply.type('text/html; charset=utf-8').send(await pageWithTiles(dir, mapTiles));
      });
    },
    { prefix: CONSOLE_PATH.slice(0, -1) },
  );
}
