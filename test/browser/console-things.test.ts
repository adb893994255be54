/**
 * The console's things table and what every page shares (docs/console.md): live updates that stay
 * right through bursts, renames, back-filled events and a lost connection; what a refused
 * subscription or an unreachable server shows; paths (keys `.` and `..`, Back to the same search and
 * page, an unknown section) and long text, in a real browser against a real server.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it, type TestContext } from 'node:test';
import type { Browser, Locator, Page, Request } from 'playwright-core';
import {
  browserSkip,
  holdNextRead,
  holdSubscriptions,
  launchBrowser,
  routeRealtime,
  screenshot,
  watchProblems,
} from '../support/browser.ts';
import { createKeyPair, Device } from '../support/device.ts';
import { createThing, unique, userWithAbilities } from '../support/fixtures.ts';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startServer, type TestServer } from '../support/server.ts';
import { STORES } from '../support/stores.ts';
import { until } from './until.ts';

for (const store of STORES) {
  describe(`the things table in a browser [${store.name}]`, { skip: browserSkip || store.skip }, () => {
    let api: TestServer;
    let browser: Browser;
    let page: Page;
    let problems: string[];
    let token: string;
    let device: Device;
    const shot = (name: string) => screenshot(page, `things-${store.name}-${name}`);
    /** Waits for `control` to hold the keyboard's focus. */
    const focusOn = (control: Locator, what: string) =>
      until(
        () => control.evaluate((element) => element === element.ownerDocument.activeElement),
        (focused) => focused,
        `the focus on ${what}`,
      );

    before(async () => {
      [api, browser] = await Promise.all([startServer(store), launchBrowser()]);
      token = await api.adminToken();
      device = new Device(api.url, await createKeyPair(api, token));
      page = await signedIn(ADMIN_EMAIL, ADMIN_PASSWORD);
      problems = watchProblems(page);
    });
    after(async () => {
      await browser?.close();
      await api?.close();
    });

    /** A new tab of its own, signed in, on the Things page. */
    async function signedIn(email: string, password: string): Promise<Page> {
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      const tab = await context.newPage();
      tab.setDefaultTimeout(15_000);
      await tab.goto(`${api.url}/console/things`);
      await tab.getByLabel('Email', { exact: true }).fill(email);
      await tab.getByLabel('Password', { exact: true }).fill(password);
      await tab.getByRole('button', { name: 'Sign in', exact: true }).click();
      await tab.getByRole('heading', { level: 1, name: 'Things', exact: true }).waitFor();
      return tab;
    }

    const go = (section: string) =>
      page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: section, exact: true }).click();
    const searchbox = () => page.getByRole('searchbox', { name: 'Search things', exact: true });
    const live = () => page.getByRole('status').filter({ hasText: 'Live' });
    const lost = () => page.getByRole('status').filter({ hasText: 'Connection lost' });
    const row = (text: string) => page.getByRole('row').filter({ hasText: text });

    /** Shows only the things matching `text`, once the table has been read for it. */
    async function showOnly(text: string, count: number) {
      await go('Things');
      await searchbox().fill(text);
      await page.getByText(new RegExp(`^Page 1 of \\d+ · ${count} ${count === 1 ? 'thing' : 'things'}$`)).waitFor();
    }

    /** The page reloaded with its realtime connection routed through the test, until the end of the test. */
    async function routedReload(t: TestContext) {
      const route = await routeRealtime(t, page);
      // Only sockets opened from now on go through the route.
      await page.reload();
      return route;
    }

    it('when 300 things are imported elsewhere then the open Things page reads its list again once for the burst, not once per thing', async () => {
      const fleet = unique('fleet');
      // A thing outside the fleet, so that the page has its search rather than the empty state.
      await createThing(api, token, { name: unique('outside') });
      await go('Things');
      await searchbox().fill(fleet);
      await page.getByText('No thing matches the search and filters.', { exact: true }).waitFor();
      await live().waitFor();
      let lists = 0;
      const count = (request: Request) => {
        if (request.method() === 'GET' && new URL(request.url()).pathname === '/api/v3/things') lists++;
      };
      page.on('request', count);
      const things = Array.from({ length: 300 }, (_, i) => ({ thing_key: `${fleet}-${i}`, name: `${fleet} ${i}` }));
      const imported = await api.request('POST', '/api/v3/things/import', { token, body: { things } });
      assert.equal(imported.body.created, 300, imported.text);
      await page.getByText('Page 1 of 6 · 300 things', { exact: true }).waitFor();
      page.off('request', count);
      // At most one a second for the burst, and one when the page's subscription was accepted if that
      // came after the counting started.
      assert.ok(lists <= 3, `${lists} requests for the list`);
      await shot('imported');
    });

    it('when a thing is created after the page read its list but before its subscription was accepted then it is shown', async (t) => {
      const fleet = unique('late');
      await createThing(api, token, { name: `${fleet} first` });
      // The page's `things` subscription reaches the server only once the test lets it.
      const held = await holdSubscriptions(t, page, (subscription) => subscription.topic === 'things');
      await page.goto(`${api.url}/console/things?search=${encodeURIComponent(fleet)}`);
      await page.getByText('Page 1 of 1 · 1 thing', { exact: true }).waitFor();
      await live().waitFor();
      await createThing(api, token, { name: `${fleet} second` });
      await until(
        async () => held.count,
        (n) => n > 0,
        'the page subscribes to things',
        15_000,
      );
      held.release();
      await page.getByText('Page 1 of 1 · 2 things', { exact: true }).waitFor();
    });

    it('when a thing is renamed elsewhere then its row shows the new name without a reload', async () => {
      const thing = await createThing(api, token, { name: unique('Tank') });
      await showOnly(thing.thing_key, 1);
      await live().waitFor();
      await page.getByRole('link', { name: thing.name, exact: true }).waitFor();
      const renamed = await api.request('PUT', `/api/v3/things/${thing.thing_key}`, {
        token,
        body: { thing: { name: `${thing.name} renamed` } },
      });
      assert.equal(renamed.status, 200, renamed.text);
      await page.getByRole('link', { name: `${thing.name} renamed`, exact: true }).waitFor();
    });

    it("when the list is read again as a thing's first event arrives then its row keeps what the event told", async (t) => {
      const group = unique('Gauge');
      const quiet = await createThing(api, token, { name: `${group} quiet` });
      const other = await createThing(api, token, { name: `${group} other` });
      await showOnly(group, 2);
      await live().waitFor();
      const lastEvent = row(quiet.thing_key).getByRole('cell').nth(3);
      assert.equal(await lastEvent.textContent(), 'Never');
      // The read that renaming the other thing asks for is answered by the server at once, and reaches
      // the page only once the quiet thing's first event has been shown live: the answer knows no event.
      const read = await holdNextRead(t, page, (url) => url.pathname === '/api/v3/things');
      const renamed = await api.request('PUT', `/api/v3/things/${other.thing_key}`, {
        token,
        body: { thing: { name: `${other.name} renamed` } },
      });
      assert.equal(renamed.status, 200, renamed.text);
      await read.answered;
      assert.equal((await device.event({ thing_key: quiet.thing_key, data: { level: 4 } })).status, 200);
      await row(quiet.thing_key).getByRole('cell', { name: 'Online', exact: true }).waitFor();
      await lastEvent.filter({ hasText: /\d/ }).waitFor();
      read.release();
      await page.getByRole('link', { name: `${other.name} renamed`, exact: true }).waitFor();
      assert.equal(await row(quiet.thing_key).getByRole('cell', { name: 'Online', exact: true }).count(), 1);
      assert.notEqual(await lastEvent.textContent(), 'Never');
    });

    it('when a back-filled event arrives live then the Last event shown stays the newer one', async () => {
      const group = unique('Valve');
      const late = await createThing(api, token, { name: `${group} late` });
      const other = await createThing(api, token, { name: `${group} other` });
      await showOnly(group, 2);
      await live().waitFor();
      const lastEvent = row(late.thing_key).getByRole('cell').nth(3);
      assert.equal(await lastEvent.textContent(), 'Never', 'a thing that has sent nothing says so');
      assert.equal((await device.event({ thing_key: late.thing_key, data: { flow: 1 } })).status, 200);
      await row(late.thing_key).getByRole('cell', { name: 'Online', exact: true }).waitFor();
      await lastEvent.filter({ hasText: /\d/ }).waitFor();
      const shown = await lastEvent.textContent();
      const hourAgo = Date.now() - 3_600_000;
      const backFilled = await device.event({ thing_key: late.thing_key, timestamp: hourAgo, data: { flow: 0 } });
      assert.equal(backFilled.status, 200);
      // Messages of a subscription come in order: once the other thing's event is shown, so was the late one.
      assert.equal((await device.event({ thing_key: other.thing_key, data: { flow: 2 } })).status, 200);
      await row(other.thing_key).getByRole('cell', { name: 'Online', exact: true }).waitFor();
      assert.equal(await lastEvent.textContent(), shown);
      const stored = await api.request('GET', `/api/v3/things/${late.thing_key}`, { token });
      assert.ok(stored.body.thing.last_event.timestamp * 1000 > hourAgo, 'the API keeps the newer one too');
    });

    it('when a thing comes online while the realtime connection is down then its row shows it once the connection is back', async (t) => {
      const thing = await createThing(api, token, { name: unique('Fan') });
      const route = await routedReload(t);
      await showOnly(thing.thing_key, 1);
      await row(thing.thing_key).getByRole('cell', { name: 'Offline', exact: true }).waitFor();
      await live().waitFor();
      await route.drop();
      await lost().waitFor();
      assert.equal((await device.event({ thing_key: thing.thing_key, data: { speed: 3 } })).status, 200);
      route.allow = true;
      await live().waitFor({ timeout: 30_000 });
      await row(thing.thing_key).getByRole('cell', { name: 'Online', exact: true }).waitFor();
    });

    it('when the connection drops and the user moves to a page without live updates then the header stops saying it reconnects', async (t) => {
      const route = await routedReload(t);
      await live().waitFor();
      await route.drop();
      await lost().waitFor();
      await go('Users');
      await page.getByRole('table', { name: 'Users' }).waitFor();
      await lost().waitFor({ state: 'detached' });
      // Counted once on Users (a retry could start while the Things page was still shown), then after
      // longer than the console waits to retry.
      const attempts = route.attempts;
      await new Promise((done) => setTimeout(done, 2500));
      assert.equal(route.attempts, attempts, 'no connection is opened for a page without live updates');
      route.allow = true;
      await go('Things');
      await live().waitFor();
    });

    it('when the server cannot be reached then the page says so, and shows the things by itself once it is back', async () => {
      const thing = await createThing(api, token, { name: unique('Heater') });
      await showOnly(thing.thing_key, 1);
      const list = /\/api\/v3\/things(\?|$)/;
      await page.route(list, (route) => route.abort('connectionrefused'));
      try {
        await go('Users');
        await go('Things');
        await page.getByRole('alert').filter({ hasText: 'The server cannot be reached' }).waitFor();
        await shot('unreachable');
      } finally {
        await page.unroute(list);
      }
      await page.getByRole('link', { name: thing.name, exact: true }).waitFor({ timeout: 30_000 });
      await page.getByRole('alert').waitFor({ state: 'detached' });
    });

    it('when the role may read things but not their data then the page says plainly that Last event is not followed live', async () => {
      await createThing(api, token, { name: unique('Meter') });
      const user = await userWithAbilities(api, token, [11]);
      const tab = await signedIn(user.email, user.password);
      const note = tab.getByText(
        'Last event is as the page was read: your role may not follow events as they arrive.',
        { exact: true },
      );
      await note.waitFor();
      assert.equal(await note.getAttribute('class'), 'muted', 'said in grey: nothing failed');
      assert.equal(await tab.getByText('permission', { exact: false }).count(), 0, "not in the API's words");
      await tab.context().close();
    });

    // The thing page itself reads the thing through GET /api/v3/things/:thing_key, whose URL a browser
    // also resolves for these keys: what is checked here is the console's own path.
    it('when a thing has the key . or .. then its link and a reload stay on its path, and Back returns to the table', async () => {
      const names = unique('Dots');
      for (const [key, suffix] of [
        ['.', 'one'],
        ['..', 'two'],
      ] as const) {
        await createThing(api, token, { thing_key: key, name: `${names} ${suffix}` });
      }
      for (const suffix of ['one', 'two']) {
        await showOnly(names, 2);
        await page.getByRole('link', { name: `${names} ${suffix}`, exact: true }).click();
        await searchbox().waitFor({ state: 'detached' });
        const path = new URL(page.url()).pathname;
        assert.match(path, /^\/console\/things\/(%252E){1,2}$/);
        await page.reload();
        assert.equal(new URL(page.url()).pathname, path, 'the server keeps the path');
        await page.getByRole('navigation', { name: 'Main' }).waitFor();
        assert.equal(await searchbox().count(), 0, 'a thing page, not the things table');
        await page.goBack();
        await row(`${names} ${suffix}`).waitFor();
      }
    });

    it('when the user goes Back from a thing then the table has its search and page again', async () => {
      const fleet = unique('pump');
      const things = Array.from({ length: 55 }, (_, i) => ({
        thing_key: `${fleet}-${String(i).padStart(2, '0')}`,
        name: `${fleet} ${String(i).padStart(2, '0')}`,
      }));
      assert.equal((await api.request('POST', '/api/v3/things/import', { token, body: { things } })).status, 200);
      await showOnly(fleet, 55);
      await page.getByRole('button', { name: 'Next', exact: true }).click();
      await page.getByText('Page 2 of 2 · 55 things', { exact: true }).waitFor();
      await page.getByRole('link', { name: `${fleet} 54`, exact: true }).click();
      await page.getByRole('heading', { level: 1, name: `${fleet} 54`, exact: true }).waitFor();
      await page.goBack();
      await page.getByText('Page 2 of 2 · 55 things', { exact: true }).waitFor();
      assert.equal(await searchbox().inputValue(), fleet);
      await page.getByRole('link', { name: `${fleet} 54`, exact: true }).waitFor();
      // A new search starts at its first page.
      await searchbox().fill(`${fleet}-10`);
      await page.getByText(/^Page 1 of 1 · (1 thing|([02-9]|\d\d+) things)$/).waitFor();
    });

    it('when another order is chosen then the table is read in it from its first page, and the address keeps it', async () => {
      const fleet = unique('valve');
      // Created one after the other, in an order that is neither their names' nor their keys'.
      for (const [key, name] of [
        ['b', 'Charlie'],
        ['c', 'Alpha'],
        ['a', 'Bravo'],
      ]) {
        await createThing(api, token, { thing_key: `${fleet}-${key}`, name: `${fleet} ${name}` });
        // Creation times a second apart, so that Newest first has one answer at any precision.
        await new Promise((resolve) => setTimeout(resolve, 1100));
      }
      await showOnly(fleet, 3);
      const names = async () =>
        (await page.getByRole('table').getByRole('row').allTextContents()).slice(1).map((text) => text.split(fleet)[1]);
      const sortBy = page.getByLabel('Sort by', { exact: true });
      const shown = async (order: string, expected: string[]) => {
        await sortBy.selectOption({ label: order });
        await until(names, (got) => JSON.stringify(got) === JSON.stringify(expected.map((n) => ` ${n}`)), order);
      };
      assert.deepEqual(await names(), [' Alpha', ' Bravo', ' Charlie'], 'by name at first');
      await shown('Name, Z to A', ['Charlie', 'Bravo', 'Alpha']);
      assert.equal(new URL(page.url()).searchParams.get('sort'), '-name');
      await shown('Key', ['Bravo', 'Charlie', 'Alpha']);
      await shown('Newest first', ['Bravo', 'Alpha', 'Charlie']);
      await shown('Oldest first', ['Charlie', 'Alpha', 'Bravo']);
      await page.reload();
      await until(
        names,
        (got) => JSON.stringify(got) === JSON.stringify([' Charlie', ' Alpha', ' Bravo']),
        'after a reload',
      );
      assert.equal(await sortBy.inputValue(), 'created_at');
      await sortBy.selectOption({ label: 'Name' });
      await until(names, (got) => got[0] === ' Alpha', 'by name again');
      assert.equal(new URL(page.url()).searchParams.get('sort'), null);
    });

    it('when Online or Offline is chosen then the table holds those things alone, and a thing that comes online leaves the Offline table live', async () => {
      const fleet = unique('drill');
      const up = await createThing(api, token, { name: `${fleet} Up` });
      const down = await createThing(api, token, { name: `${fleet} Down` });
      assert.equal((await device.event({ thing_key: up.thing_key, data: { rpm: 1 } })).status, 200);
      await showOnly(fleet, 2);
      const status = page.getByLabel('Status', { exact: true });
      await status.selectOption({ label: 'Online' });
      await page.getByText('Page 1 of 1 · 1 thing', { exact: true }).waitFor();
      await row(up.thing_key).getByRole('cell', { name: 'Online', exact: true }).waitFor();
      assert.equal(await row(down.thing_key).count(), 0, 'the offline thing is not in the Online table');
      await status.selectOption({ label: 'Offline' });
      await row(down.thing_key).getByRole('cell', { name: 'Offline', exact: true }).waitFor();
      assert.equal(await row(up.thing_key).count(), 0, 'the online thing is not in the Offline table');
      assert.equal(new URL(page.url()).searchParams.get('status'), 'offline');
      await shot('offline');
      assert.equal((await device.event({ thing_key: down.thing_key, data: { rpm: 2 } })).status, 200);
      await page.getByText('No thing matches the search and filters.', { exact: true }).waitFor();
      await status.selectOption({ label: 'All' });
      await page.getByText('Page 1 of 1 · 2 things', { exact: true }).waitFor();
      assert.equal(new URL(page.url()).searchParams.get('status'), null);
    });

    it('when New thing is pressed from the keyboard then the focus goes to its form, not to the page', async () => {
      await go('Things');
      const create = page.getByRole('button', { name: 'New thing', exact: true });
      await create.focus();
      await page.keyboard.press('Enter');
      await page.getByRole('form', { name: 'New thing', exact: true }).waitFor();
      const name = page.getByLabel('Name', { exact: true });
      await focusOn(name, 'Name');
      await page.keyboard.type('Typed at once');
      assert.equal(await name.inputValue(), 'Typed at once');
      await page.getByRole('button', { name: 'Cancel', exact: true }).click();
    });

    it('when Escape is pressed in the New thing form then the form goes without creating anything and New thing has the focus again', async () => {
      await go('Things');
      const before = await api.request('GET', '/api/v3/things', { token, query: { per: 1 } });
      const create = page.getByRole('button', { name: 'New thing', exact: true });
      await create.focus();
      await page.keyboard.press('Enter');
      const form = page.getByRole('form', { name: 'New thing', exact: true });
      await form.waitFor();
      const name = page.getByLabel('Name', { exact: true });
      await focusOn(name, 'Name');
      await page.keyboard.type('Left by Escape');
      await page.keyboard.press('Escape');
      await form.waitFor({ state: 'detached' });
      await focusOn(create, 'New thing');
      const after = await api.request('GET', '/api/v3/things', { token, query: { per: 1 } });
      assert.equal(after.body.total_count, before.body.total_count, 'nothing was created');
      // The form opens empty again: what was typed went with it.
      await page.keyboard.press('Enter');
      await form.waitFor();
      assert.equal(await name.inputValue(), '');
      await page.getByRole('button', { name: 'Cancel', exact: true }).click();
      await form.waitFor({ state: 'detached' });
    });

    it('when the path names no section then a page says it is not found', async () => {
      await page.goto(`${api.url}/console/alert`);
      await page.getByRole('heading', { level: 1, name: 'Page not found', exact: true }).waitFor();
      assert.equal(await searchbox().count(), 0);
      await page.getByRole('link', { name: 'Go to Things', exact: true }).click();
      await page.getByRole('heading', { level: 1, name: 'Things', exact: true }).waitFor();
    });

    it('when a name or a value is very long unbroken text then no page gets wider than the window', async () => {
      const thing = await createThing(api, token, { name: 'X'.repeat(200) });
      const width = () => page.evaluate('document.documentElement.scrollWidth - window.innerWidth') as Promise<number>;
      await showOnly(thing.thing_key, 1);
      await page.getByRole('link', { name: thing.name, exact: true }).waitFor();
      assert.ok((await width()) <= 0, `the Things page is ${await width()} px too wide`);
      await shot('long-name');
      assert.equal(
        (await device.event({ thing_key: thing.thing_key, data: { note: 'y'.repeat(20_000), level: 1 } })).status,
        200,
      );
      await page.getByRole('link', { name: thing.name, exact: true }).click();
      const latest = page.getByRole('region', { name: 'Latest values' });
      await latest.getByText('y'.repeat(100)).waitFor();
      assert.ok((await width()) <= 0, `the thing page is ${await width()} px too wide`);
      // Shown cut, saying so: the whole value would push the rest of the page thousands of pixels down.
      assert.equal(await latest.getByText('y'.repeat(300)).count(), 0, 'the value is cut');
      await latest.getByText(`(the first 300 of ${(20_000).toLocaleString('en-US')} characters)`).waitFor();
      await shot('long-value');
    });

    it('when the tests are done then the page broke no Content-Security-Policy and threw nothing', () => {
      assert.deepEqual(problems, []);
    });
  });
}
