/**
 * A dashboard's map on the server's tiles (docs/console.md, "Dashboards"; MAP_TILE_URL in
 * docs/configuration.md): a tile server on loopback is asked for tiles by the browser, the attribution
 * is shown as text, and the Content-Security-Policy lets the tiles in without a refusal; a map of one
 * thing says `1 thing`.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { deflateSync } from 'node:zlib';
import type { Browser, Page } from 'playwright-core';
import { browserSkip, launchBrowser, screenshot, signedInTab } from '../support/browser.ts';
import { createThing, defaultTemplateKey } from '../support/fixtures.ts';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startServer, type TestServer } from '../support/server.ts';
import { STORES } from '../support/stores.ts';
import { until } from './until.ts';

/** A 1x1 light grey PNG: enough for the browser to draw a tile. */
function tilePng(): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([length, body, crc]);
  };
  const header = Buffer.from([0, 0, 0, 1, 0, 0, 0, 1, 8, 2, 0, 0, 0]);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(Buffer.from([0, 220, 220, 220]))),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

function crc32(bytes: Buffer): number {
  let crc = 0xffffffff;
  for (const byte of bytes) {
    crc ^= byte;
    for (let k = 0; k < 8; k++) crc = crc & 1 ? (crc >>> 1) ^ 0xedb88320 : crc >>> 1;
  }
  return (crc ^ 0xffffffff) >>> 0;
}

const sqlite = STORES[0]!;

describe('a dashboard map on the server’s tiles', { skip: browserSkip }, () => {
  let tiles: Server;
  const asked: string[] = [];
  let api: TestServer;
  let browser: Browser;
  let page: Page;
  const problems: string[][] = [];

  before(async () => {
    const png = tilePng();
    tiles = createServer((request, response) => {
      asked.push(request.url ?? '');
      response.writeHead(200, { 'content-type': 'image/png' }).end(png);
    });
    await new Promise<void>((listening) => tiles.listen(0, '127.0.0.1', listening));
    const port = (tiles.address() as AddressInfo).port;
    [api, browser] = await Promise.all([
      startServer(sqlite, {
        env: {
          MAP_TILE_URL: `http://127.0.0.1:${port}/tiles/{z}/{x}/{y}.png`,
          MAP_TILE_ATTRIBUTION: '© Test tiles <b>contributors</b>',
        },
      }),
      launchBrowser(),
    ]);
  });
  after(async () => {
    await browser?.close();
    await api?.close();
    tiles?.close();
  });

  it('when a map widget is drawn then its tiles come from MAP_TILE_URL and the attribution is shown as written', async () => {
    const token = await api.adminToken();
    const template = await defaultTemplateKey(api, token);
    await createThing(api, token, { name: 'Boiler', coordinates: [52.52, 13.4] });
    // A name with markup in it, as a device may register one: shown as text.
    await createThing(api, token, { name: '<b id="injected">Pump</b>', coordinates: [48.14, 11.58] });
    const created = await api.request('POST', '/api/v3/dashboards', {
      token,
      body: {
        dashboard: {
          name: 'Plants',
          widgets: [
            {
              type: 'map',
              title: 'Plant map',
              source: { thing_template_key: template },
              layout: { x: 0, y: 0, w: 8, h: 5 },
            },
          ],
        },
      },
    });
    assert.equal(created.status, 200, created.text);
    const key = created.body.dashboard.dashboard_key;
    page = await signedInTab(
      browser,
      `${api.url}/console/dashboards/${key}`,
      { email: ADMIN_EMAIL, password: ADMIN_PASSWORD },
      problems,
    );
    const map = page.getByRole('region', { name: 'Plant map', exact: true });
    await map.getByRole('figure', { name: 'Map of 2 things', exact: true }).waitFor();
    await map.getByText('© Test tiles <b>contributors</b>', { exact: false }).waitFor();
    await map.locator('img.leaflet-tile-loaded').first().waitFor();
    assert.ok(
      asked.some((path) => /^\/tiles\/\d+\/\d+\/\d+\.png$/.test(path)),
      `tiles asked for: ${asked.join(' ')}`,
    );
    assert.equal(await map.locator('.leaflet-control-attribution b').count(), 0, 'the attribution is text, not markup');
    // The markers are drawn a frame after the map's figure is named.
    const markers = map.locator('path.leaflet-interactive');
    await until(
      () => markers.count(),
      (count) => count === 2,
      'the markers drawn',
    );
    const tooltips: string[] = [];
    for (const marker of await markers.all()) {
      await marker.hover({ force: true });
      const tooltip = map.locator('.leaflet-tooltip').last();
      await tooltip.waitFor();
      tooltips.push((await tooltip.textContent()) ?? '');
    }
    assert.ok(tooltips.includes('<b id="injected">Pump</b>: Offline'), `tooltips: ${tooltips.join(' | ')}`);
    assert.equal(await page.locator('#injected').count(), 0, 'a thing name is text in its tooltip, not markup');
    await screenshot(page, 'dashboard-map-tiles');
    assert.deepEqual(problems.flat(), []);
  });

  it('when a map widget shows one thing then its name and caption say 1 thing, not 1 things', async () => {
    const token = await api.adminToken();
    const placed = await createThing(api, token, { name: 'Lone boiler', coordinates: [50.11, 8.68] });
    const unplaced = await createThing(api, token, { name: 'Boiler without a place' });
    const map = (title: string, keys: string[], x: number) => ({
      type: 'map',
      title,
      source: { thing_keys: keys },
      layout: { x, y: 0, w: 6, h: 4 },
    });
    const widgets = [map('One', [placed.thing_key], 0), map('One of two', [placed.thing_key, unplaced.thing_key], 6)];
    const created = await api.request('POST', '/api/v3/dashboards', {
      token,
      body: { dashboard: { name: 'One boiler', widgets } },
    });
    assert.equal(created.status, 200, created.text);
    await page.goto(`${api.url}/console/dashboards/${created.body.dashboard.dashboard_key}`);
    const one = page.getByRole('region', { name: 'One', exact: true });
    await one.getByRole('figure', { name: 'Map of 1 thing', exact: true }).waitFor();
    await one.getByText('With coordinates: 1 of 1 thing', { exact: true }).waitFor();
    const oneOfTwo = page.getByRole('region', { name: 'One of two', exact: true });
    await oneOfTwo.getByRole('figure', { name: 'Map of 1 thing', exact: true }).waitFor();
    await oneOfTwo.getByText('With coordinates: 1 of 2 things', { exact: true }).waitFor();
    await screenshot(page, 'dashboard-map-one-thing');
    assert.deepEqual(problems.flat(), []);
  });
});
