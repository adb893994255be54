/**
 * Managing things in the console, in a real browser against a real server (docs/console.md,
 * "Pages"): New thing, Import things with a dry run and a bad row, Edit, Export as a download
 * that never puts the token in a URL, Delete events of a range after a dialog naming it, Delete, and a
 * role that may only read things offered none of them.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { browserSkip, holdNextRead, launchBrowser, screenshot } from '../support/browser.ts';
import { type ConsolePage, expectReadOnly, openConsole } from '../support/console-session.ts';
import { createThing, userWithAbilities } from '../support/fixtures.ts';
import { startServer, type TestServer } from '../support/server.ts';
import { STORES } from '../support/stores.ts';

const CSV = 'thing_key,name,tags,bi_directional\npump-7,Pump 7,"hall-b,water",false\nboiler-1,Boiler again,,true\n';

/**
 * The minute of `ms` in the browser's own time zone, as a `datetime-local` field takes it. Written as
 * text: functions tsx compiles carry helpers (`__name`) the page lacks.
 */
function localMinute(page: Page, ms: number): Promise<string> {
  return page.evaluate(`(() => {
    const d = new Date(${ms});
    const pad = (n) => String(n).padStart(2, '0');
    return d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate()) + 'T' + pad(d.getHours()) + ':' + pad(d.getMinutes());
  })()`);
}

for (const store of STORES) {
  describe(`managing things in the console [${store.name}]`, { skip: browserSkip || store.skip }, () => {
    let api: TestServer;
    let browser: Browser;
    let admin: ConsolePage;
    let page: Page;
    let token: string;
    const shot = (name: string) => screenshot(page, `${store.name}-things-manage-${name}`);
    const field = (label: string) => page.getByLabel(label, { exact: true });
    const button = (name: string) => page.getByRole('button', { name, exact: true });

    before(async () => {
      [api, browser] = await Promise.all([startServer(store), launchBrowser()]);
      token = await api.adminToken();
      admin = await openConsole(browser, api.url, 'things', 'Things');
      page = admin.page;
    });
    after(async () => {
      await browser?.close();
      await api?.close();
    });

    const storedThing = async (key: string) => api.request('GET', `/api/v3/things/${key}`, { token });
    const thingCount = async () => (await api.request('GET', '/api/v3/things', { token })).body.total_count as number;

    it('when an organisation has no things then the page says so, and New thing creates one with every field typed', async () => {
      await page.getByRole('heading', { name: 'No things yet', exact: true }).waitFor();
      await shot('empty');
      await button('New thing').click();
      await field('Name').fill('Boiler 1');
      await field('Key').fill('boiler-1');
      await page.getByRole('option', { name: 'Default', selected: true }).waitFor({ state: 'attached' });
      await field('Description').fill('Hall A, <b>east</b> wall');
      await field('Tags').fill('hall-a, gas');
      await page.getByRole('checkbox', { name: 'Bi-directional', exact: true }).check();
      await shot('new');
      await button('Create').click();
      await page.getByRole('heading', { level: 1, name: 'Boiler 1', exact: true }).waitFor();
      const stored = (await storedThing('boiler-1')).body.thing;
      assert.deepEqual(
        [stored.name, stored.description, stored.tags_array, stored.bi_directional, stored.thing_template_name],
        ['Boiler 1', 'Hall A, <b>east</b> wall', ['hall-a', 'gas'], true, 'Default'],
      );
    });

    it("when a CSV with a bad row is imported as a dry run then the row's errors are shown as the API gives them and nothing is written", async () => {
      const expected = await api.request('POST', '/api/v3/things/import', {
        token,
        rawBody: CSV,
        headers: { 'content-type': 'text/csv' },
        query: { dry_run: true },
      });
      assert.equal(expected.status, 200, expected.text);
      const rowError = expected.body.failed[0].errors[0];
      await page.goto(`${api.url}/console/things`);
      await button('Import things').click();
      await field('File').setInputFiles({ name: 'fleet.csv', mimeType: 'text/csv', buffer: Buffer.from(CSV) });
      assert.equal(await page.getByRole('checkbox', { name: 'Dry run', exact: true }).isChecked(), true);
      await button('Import').click();
      const failed = page.getByRole('table', { name: 'Rows that failed', exact: true });
      const row = failed.getByRole('row').filter({ hasText: rowError.message });
      await row.waitFor();
      assert.equal(await row.getByRole('cell').first().textContent(), '2');
      await page.getByText('Dry run: would create 1, would update 0; 1 row failed.').waitFor();
      assert.equal(await thingCount(), 1, 'a dry run writes nothing');
      await shot('import-dry-run');

      await page.getByRole('checkbox', { name: 'Dry run', exact: true }).uncheck();
      await button('Import').click();
      await page.getByText('Created 1, updated 0; 1 row failed.').waitFor();
      assert.equal((await storedThing('pump-7')).body.thing.tags, 'hall-b,water');
      await button('Cancel').click();
      await page.getByRole('link', { name: 'Pump 7', exact: true }).waitFor();
    });

    it('when Edit renames a thing then Save writes it and the heading follows', async () => {
      await page.getByRole('link', { name: 'Boiler 1', exact: true }).click();
      await button('Edit').click();
      assert.equal(await field('Tags').inputValue(), 'hall-a,gas');
      await field('Name').fill('Boiler 1 (east)');
      await button('Save').click();
      await page.getByRole('heading', { level: 1, name: 'Boiler 1 (east)', exact: true }).waitFor();
      assert.equal((await storedThing('boiler-1')).body.thing.name, 'Boiler 1 (east)');
    });

    it('when a read of the thing lands after its first event was shown live then Export and Delete events stay offered', async (t) => {
      await createThing(api, token, { name: 'Meter 1', thing_key: 'meter-1' });
      await page.goto(`${api.url}/console/things/meter-1`);
      await page.getByRole('heading', { level: 1, name: 'Meter 1', exact: true }).waitFor();
      // The page's next read of the thing is answered by the server at once, and shown only once the
      // first event has reached the page live: the answer knows no event.
      const read = await holdNextRead(t, page, (url) => url.pathname === '/api/v3/things/meter-1');
      const renamed = await api.request('PUT', '/api/v3/things/meter-1', {
        token,
        body: { thing: { name: 'Meter 2' } },
      });
      assert.equal(renamed.status, 200, renamed.text);
      await read.answered;
      const sent = await api.request('POST', '/api/v3/things/meter-1/events', {
        token,
        body: { events: [{ timestamp: Date.now(), data: { flow: 3.5 } }] },
      });
      assert.equal(sent.status, 200, sent.text);
      await button('Export').waitFor();
      read.release();
      await page.getByRole('heading', { level: 1, name: 'Meter 2', exact: true }).waitFor();
      assert.equal(await button('Export').count(), 1, 'Export is still offered');
      assert.equal(await button('Delete events').count(), 1, 'Delete events is still offered');
      assert.match((await page.locator('h1 + p').textContent()) ?? '', /· Online/);
      await page.goto(`${api.url}/console/things/boiler-1`);
      await page.getByRole('heading', { level: 1, name: 'Boiler 1 (east)', exact: true }).waitFor();
    });

    // The three events of the next two tests, an hour apart, on whole minutes three hours back; the
    // second test deletes the middle one by its minute, so both read this one time.
    const minute = 60_000;
    const start = Math.floor(Date.now() / minute) * minute - 180 * minute;

    it("when Export offers NDJSON and CSV then each downloads the thing's events, and no URL carries the token", async () => {
      const events = [0, 60, 120].map((m, i) => ({ timestamp: start + m * minute, data: { temperature: 20 + i } }));
      const sent = await api.request('POST', '/api/v3/things/boiler-1/events', { token, body: { events } });
      assert.equal(sent.status, 200, sent.text);
      const urls: string[] = [];
      page.on('request', (request) => urls.push(request.url()));
      await button('Export').click();
      const region = page.getByRole('region', { name: 'Export', exact: true });
      /** The file `format` downloads, with the times `Times` says. */
      const exported = async (format: string) => {
        const download = page.waitForEvent('download');
        await region.getByRole('button', { name: format, exact: true }).click();
        const file = await download;
        assert.match(file.url(), /^blob:/);
        return readFile(await file.path(), 'utf8');
      };
      // By default, times as the console shows them: the date and time in the browser's time zone.
      const first = (await localMinute(page, start)).replaceAll('-', '/').replace('T', ' ');
      for (const [format, lines] of [
        ['NDJSON', 3],
        ['CSV', 4],
      ] as const) {
        const text = await exported(format);
        assert.equal(text.trim().split('\n').length, lines, `${format}: ${text}`);
        if (format === 'CSV') assert.match(text, new RegExp(`^timestamp,temperature\r\n${first}:00,20\r\n`));
        else assert.equal(JSON.parse(text.split('\n')[0] ?? '').timestamp, `${first}:00`);
      }
      await region.getByLabel('Times', { exact: true }).selectOption({ label: 'Epoch seconds' });
      assert.match(await exported('CSV'), new RegExp(`^timestamp,temperature\r\n${start / 1000},20\r\n`));
      assert.ok(urls.some((url) => url.includes('/events/export?format=csv')));
      assert.equal(urls.filter((url) => url.includes(token)).length, 0);
      await shot('export');
    });

    it('when the browser does not know its own time zone then Export writes the times in UTC', async () => {
      const lost = await openConsole(browser, api.url, 'things/boiler-1', 'Boiler 1 (east)', undefined, {
        timezoneId: 'Etc/Unknown',
      });
      try {
        await lost.page.getByRole('button', { name: 'Export', exact: true }).click();
        const region = lost.page.getByRole('region', { name: 'Export', exact: true });
        const times = region.getByLabel('Times', { exact: true });
        assert.equal(await times.locator('option:checked').textContent(), 'Date and time (UTC)');
        const download = lost.page.waitForEvent('download');
        await region.getByRole('button', { name: 'CSV', exact: true }).click();
        const text = await readFile(await (await download).path(), 'utf8');
        const utc = new Date(start).toISOString().slice(0, 19).replaceAll('-', '/').replace('T', ' ');
        assert.match(text, new RegExp(`^timestamp,temperature\r\n${utc},20\r\n`));
        assert.deepEqual(lost.problems, []);
      } finally {
        await lost.close();
      }
    });

    it('when Delete events is given a range then a dialog names the thing and the range, and only the events in it go', async () => {
      // The middle event, one hour after the first, in the browser's own time zone.
      const local = await localMinute(page, start + 60 * minute);
      await page.getByRole('button', { name: 'Delete events', exact: true }).first().click();
      const panel = page.getByRole('region', { name: 'Delete events', exact: true });
      await panel.getByLabel('From', { exact: true }).fill(local);
      await panel.getByLabel('To', { exact: true }).fill(local);
      await panel.getByRole('button', { name: 'Delete events', exact: true }).click();
      const dialog = page.getByRole('dialog', { name: 'Delete events of Boiler 1 (east)?', exact: true });
      await dialog.waitFor();
      const question = (await dialog.locator('p').first().textContent()) ?? '';
      assert.match(question, /Every event of Boiler 1 \(east\) from .+ to .+ is deleted/);
      await shot('delete-events');
      await dialog.getByRole('button', { name: 'Cancel', exact: true }).click();
      await panel.getByRole('button', { name: 'Delete events', exact: true }).click();
      await dialog.getByRole('button', { name: 'Delete', exact: true }).click();
      await panel.getByRole('status').filter({ hasText: '1 event deleted.' }).waitFor();
      const left = await api.request('POST', '/api/v3/query/thing_data', {
        token,
        body: { thing_key: 'boiler-1', from: Math.floor(start / 1000) - 60, to: Math.floor(Date.now() / 1000) },
      });
      assert.equal(left.status, 200, left.text);
      assert.deepEqual(
        left.body['boiler-1'].event_data.map((e: { data: { temperature: number } }) => e.data.temperature).sort(),
        [20, 22],
      );
    });

    it('when every event of a thing is deleted then its latest values and chart show none, without a reload', async () => {
      const recent = Date.now() - 60_000;
      const sent = await api.request('POST', '/api/v3/things/boiler-1/events', {
        token,
        body: { events: [{ timestamp: recent, data: { temperature: 97.25 } }] },
      });
      assert.equal(sent.status, 200, sent.text);
      const latest = page.getByRole('region', { name: 'Latest values', exact: true });
      const telemetry = page.getByRole('region', { name: 'Telemetry', exact: true });
      await latest.getByText('97.25', { exact: true }).waitFor();
      await telemetry.getByText(/^(1 point|([2-9]|[1-9]\d+) points)\b/).waitFor();
      const local = (ms: number) => localMinute(page, ms);
      const panel = page.getByRole('region', { name: 'Delete events', exact: true });
      if (!(await panel.isVisible()))
        await page.getByRole('button', { name: 'Delete events', exact: true }).first().click();
      await panel.getByLabel('From', { exact: true }).fill(await local(Date.now() - 6 * 3_600_000));
      await panel.getByLabel('To', { exact: true }).fill(await local(Date.now()));
      await panel.getByRole('button', { name: 'Delete events', exact: true }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Delete', exact: true }).click();
      await panel
        .getByRole('status')
        .filter({ hasText: /events? deleted\./ })
        .waitFor();
      await latest.getByText(/^No event yet\./).waitFor();
      assert.equal(await latest.getByText('97.25', { exact: true }).count(), 0);
      await telemetry.getByText('No numeric values in this range.', { exact: true }).waitFor();
      await shot('all-events-deleted');
    });

    it('when a role may only read things then neither the list nor a thing offers a change', async () => {
      const reader = await userWithAbilities(api, token, [11]);
      await expectReadOnly(
        browser,
        api.url,
        { path: 'things', heading: 'Things', screenshot: `${store.name}-things-manage-read-only-list` },
        reader,
        (on) => on.getByRole('link', { name: 'Pump 7', exact: true }).waitFor(),
        /New thing|Import things/,
      );
      await expectReadOnly(
        browser,
        api.url,
        { path: 'things/boiler-1', heading: 'Boiler 1 (east)', screenshot: `${store.name}-things-manage-read-only` },
        reader,
        (on) => on.getByRole('heading', { name: 'Alerts', exact: true }).waitFor(),
        /^(Edit|Delete|Export|Delete events)$/,
      );
    });

    it('when Delete is confirmed on a thing then the dialog named it, and it is gone with the list shown again', async () => {
      await page.goto(`${api.url}/console/things/pump-7`);
      await button('Delete').click();
      const dialog = page.getByRole('dialog', { name: 'Delete Pump 7?', exact: true });
      await dialog.getByText('pump-7').waitFor();
      await dialog.getByRole('button', { name: 'Delete', exact: true }).click();
      await page.getByRole('heading', { level: 1, name: 'Things', exact: true }).waitFor();
      assert.equal((await storedThing('pump-7')).status, 404);
    });

    it('when the journeys are done then the page broke no Content-Security-Policy and threw nothing', () => {
      assert.deepEqual(admin.problems, []);
    });
  });
}
