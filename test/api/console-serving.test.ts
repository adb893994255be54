/**
 * How the server serves the console (docs/console.md, "Serving"): the redirect from /, cache headers
 * of hashed assets and of index.html, pages answered with index.html, the Content-Security-Policy,
 * pre-compressed copies, and a clear answer while the console is not built. A folder of stand-in
 * files plays the build here; the browser tests drive the real one.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { startServer, type TestServer } from '../support/server.ts';
import { STORES } from '../support/stores.ts';

const sqlite = STORES[0]!;
const INDEX =
  '<!doctype html><title>console</title><script type="module" src="/console/assets/app-1a2b3c.js"></script>';
const SCRIPT = 'console.log("the console");';

function builtConsole(): string {
  const dir = mkdtempSync(join(tmpdir(), 'thingbase-console-'));
  mkdirSync(join(dir, 'assets'));
  writeFileSync(join(dir, 'index.html'), INDEX);
  writeFileSync(join(dir, 'assets', 'app-1a2b3c.js'), SCRIPT);
  writeFileSync(join(dir, 'assets', 'app-1a2b3c.js.gz'), gzipSync(SCRIPT));
  return dir;
}

describe('the console, served', () => {
  let api: TestServer;
  before(async () => {
    api = await startServer(sqlite, { env: { CONSOLE_DIR: builtConsole() } });
  });
  after(() => api.close());

  it('when / is asked for then it redirects to /console/', async () => {
    const front = await api.request('GET', '/', { headers: { 'content-type': '' } });
    assert.equal(front.status, 302);
    assert.equal(front.headers.location, '/console/');
  });

  it('when /console/ is asked for then index.html comes, revalidated every time, with a CSP allowing no inline script', async () => {
    for (const path of ['/console/', '/console']) {
      const page = await api.request('GET', path, { headers: { 'content-type': '' } });
      assert.equal(page.status, 200, path);
      assert.equal(page.text, INDEX);
      assert.match(String(page.headers['content-type']), /^text\/html/);
      assert.equal(page.headers['cache-control'], 'no-cache');
      const csp = String(page.headers['content-security-policy']);
      assert.match(csp, /script-src 'self'(;|$)/);
      assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
      assert.match(csp, /frame-ancestors 'none'/);
      assert.equal(page.headers['x-content-type-options'], 'nosniff');
    }
  });

  it("when a page of the application is asked for then index.html comes, for the application's router", async () => {
    const page = await api.request('GET', '/console/things/boiler-1', { headers: { 'content-type': '' } });
    assert.equal(page.status, 200);
    assert.equal(page.text, INDEX);
    assert.equal(page.headers['cache-control'], 'no-cache');
  });

  it('when a page or an asset is asked for with HEAD then the answer is that of GET without its body', async () => {
    for (const path of ['/console/', '/console/things/boiler-1', '/console/assets/app-1a2b3c.js']) {
      const got = await api.request('GET', path, { headers: { 'content-type': '' } });
      const head = await api.request('HEAD', path, { headers: { 'content-type': '' } });
      assert.equal(head.status, 200, path);
      assert.equal(head.text, '', path);
      for (const name of ['content-type', 'content-length', 'cache-control', 'content-security-policy']) {
        assert.equal(head.headers[name], got.headers[name], `${path}: ${name}`);
      }
    }
    const missing = await api.request('HEAD', '/console/assets/gone-000000.js', { headers: { 'content-type': '' } });
    assert.equal(missing.status, 404);
  });

  it('when a hashed asset is asked for then it is cached for a year as immutable, compressed when accepted', async () => {
    const plain = await api.request('GET', '/console/assets/app-1a2b3c.js', { headers: { 'content-type': '' } });
    assert.equal(plain.status, 200);
    assert.equal(plain.text, SCRIPT);
    assert.equal(plain.headers['cache-control'], 'public, max-age=31536000, immutable');
    assert.match(String(plain.headers['content-type']), /javascript/);
    const zipped = await api.request('GET', '/console/assets/app-1a2b3c.js', {
      headers: { 'content-type': '', 'accept-encoding': 'gzip' },
    });
    assert.equal(zipped.headers['content-encoding'], 'gzip');
  });

  it('when a missing asset, or a page by another method, is asked for then the answer is a 404 error, not index.html', async () => {
    const missing = await api.request('GET', '/console/assets/gone-000000.js', { headers: { 'content-type': '' } });
    assert.equal(missing.status, 404);
    assert.equal(missing.body.success, false);
    assert.equal(missing.body.errors[0].code, 'not_found');
    assert.notEqual(missing.headers['cache-control'], 'public, max-age=31536000, immutable');
    const posted = await api.request('POST', '/console/things', { body: {} });
    assert.equal(posted.status, 404);
    assert.equal(posted.body.success, false);
  });
});

describe('the console, not built', () => {
  let api: TestServer;
  before(async () => {
    api = await startServer(sqlite, { env: { CONSOLE_DIR: mkdtempSync(join(tmpdir(), 'thingbase-console-empty-')) } });
  });
  after(() => api.close());

  it('when the console folder has no index.html then its pages answer 503 saying how to build it, and the API still works', async () => {
    const page = await api.request('GET', '/console/things', { headers: { 'content-type': '' } });
    assert.equal(page.status, 503);
    assert.match(page.text, /not built .*npm run build/);
    assert.equal(page.headers['cache-control'], 'no-cache');
    const health = await api.request('GET', '/healthz', { headers: { 'content-type': '' } });
    assert.equal(health.status, 200);
  });
});

describe('the console, with map tiles', () => {
  let api: TestServer;
  before(async () => {
    api = await startServer(sqlite, {
      env: {
        CONSOLE_DIR: builtConsole(),
        MAP_TILE_URL: 'https://{s}.tile.example.org/{z}/{x}/{y}.png?key="x"',
        MAP_TILE_ATTRIBUTION: '© Example <maps>',
      },
    });
  });
  after(() => api.close());

  it('when MAP_TILE_URL is set then pages name the tiles, escaped, and the CSP lets images come from their server alone', async () => {
    for (const path of ['/console/', '/console/dashboards/d1']) {
      const page = await api.request('GET', path, { headers: { 'content-type': '' } });
      assert.equal(page.status, 200, path);
      assert.match(
        page.text,
        /<meta name="thingbase-map-tile-url" content="https:\/\/\{s\}\.tile\.example\.org\/\{z\}\/\{x\}\/\{y\}\.png\?key=&quot;x&quot;" \/>/,
      );
      assert.match(page.text, /<meta name="thingbase-map-tile-attribution" content="© Example &lt;maps&gt;" \/>/);
      assert.ok(page.text.endsWith(INDEX.replace('<!doctype html>', '')), 'the rest of the page as built');
      const csp = String(page.headers['content-security-policy']);
      assert.match(csp, /img-src 'self' data: https:\/\/\*\.tile\.example\.org(;|$)/);
      assert.match(csp, /connect-src 'self'(;|$)/);
    }
  });
});
