/**
 * How the console's controls look where their state or their neighbours ask for care (docs/console.md,
 * "Pages" and "Dashboards"): a field the API refused has a border unlike a valid field's, thicker and
 * in the error's red, not its colour alone; `Connect a device` stands level with the buttons beside it
 * on the Things and Key pairs pages. axe-core finds no serious or critical violation on each. A
 * screenshot of each goes to test-results/console/ (appearance-*.png). Layout does not depend on the
 * store: SQLite only.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Locator, Page } from 'playwright-core';
import { assertAccessible } from '../support/axe.ts';
import { browserSkip, launchBrowser, screenshot, signedInTab } from '../support/browser.ts';
import { createKeyPair } from '../support/device.ts';
import { createThing } from '../support/fixtures.ts';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startServer, type TestServer } from '../support/server.ts';
import { STORES } from '../support/stores.ts';

const store = STORES.find((s) => s.name === 'sqlite');
if (!store) throw new Error('no SQLite store case');

/** What a control's border looks like: its colour and the widths it is drawn with. */
type Border = { color: string; width: string; shadow: string };

function borderOf(control: Locator): Promise<Border> {
  return control.evaluate((element) => {
    const style = getComputedStyle(element);
    return { color: style.borderTopColor, width: style.borderTopWidth, shadow: style.boxShadow };
  });
}

/** The vertical centre of a box, in CSS pixels. */
async function middle(target: Locator): Promise<number> {
  const box = await target.boundingBox();
  assert.ok(box, 'it is shown');
  return box.y + box.height / 2;
}

/** Asserts that each of `links` has its vertical centre within 1 px of `button`'s, and its text on the button's baseline. */
async function assertLevel(button: Locator, links: Locator[]): Promise<void> {
  const centre = await middle(button);
  for (const link of links) {
    const name = await link.textContent();
    const at = await middle(link);
    assert.ok(Math.abs(at - centre) <= 1, `${name} is centred at ${at} px, the button beside it at ${centre} px`);
  }
}

describe("the console's details of appearance", { skip: browserSkip || store.skip }, () => {
  let api: TestServer;
  let browser: Browser;
  let page: Page;
  const problems: string[][] = [];
  const shot = (name: string) => screenshot(page, `appearance-${name}`);

  before(async () => {
    [api, browser] = await Promise.all([startServer(store), launchBrowser()]);
    page = await signedInTab(
      browser,
      `${api.url}/console/things`,
      { email: ADMIN_EMAIL, password: ADMIN_PASSWORD },
      problems,
    );
    await page.getByRole('heading', { level: 1, name: 'Things', exact: true }).waitFor();
  });
  after(async () => {
    await browser?.close();
    await api?.close();
  });

  /** The page at `path`, once its heading `heading` shows. */
  async function open(path: string, heading: string): Promise<void> {
    await page.goto(`${api.url}/console/${path}`);
    await page.getByRole('heading', { level: 1, name: heading, exact: true }).waitFor();
  }

  it("when the API refuses a field then its border is drawn thicker and in the error's red, unlike a valid field's", async () => {
    await open('key-pairs', 'Key pairs');
    await page.getByRole('button', { name: 'New key pair', exact: true }).click();
    const form = page.getByRole('form', { name: 'New key pair', exact: true });
    const name = form.getByLabel('Name', { exact: true });
    const valid = await borderOf(name);
    await name.fill('N'.repeat(201));
    await form.getByRole('button', { name: 'Create', exact: true }).click();
    await page.locator('input[aria-invalid="true"]').waitFor();
    // Moved off the field, so that what is measured is not its focus ring.
    await page.locator('h1').click();
    const invalid = await borderOf(name);
    await shot('invalid-field');
    assert.notEqual(invalid.color, valid.color, "the refused field's border colour is a valid one's");
    assert.equal(invalid.color, 'rgb(179, 38, 30)', "the refused field's border is the error's red");
    // Not its colour alone: the border is drawn twice as thick (a ring of the same red around it).
    assert.match(invalid.shadow, /rgb\(179, 38, 30\) 0px 0px 0px 1px/, `the refused field's ring: ${invalid.shadow}`);
    assert.equal(valid.shadow, 'none', "a valid field's has none");
    await assertAccessible(page, 'a refused field');
  });

  it('when Connect a device stands beside buttons on the Things and Key pairs pages then it is level with them', async () => {
    const token = await api.adminToken();
    await createThing(api, token, { name: 'Boiler' });
    await createKeyPair(api, token);
    await open('things', 'Things');
    const actions = page.locator('main .actions').first();
    await assertLevel(actions.getByRole('button', { name: 'New thing', exact: true }), [
      actions.getByRole('button', { name: 'Import things', exact: true }),
      actions.getByRole('link', { name: 'Connect a device', exact: true }),
    ]);
    await shot('things-actions');
    await open('key-pairs', 'Key pairs');
    await page.getByRole('table', { name: 'Key pairs', exact: true }).waitFor();
    await assertLevel(page.getByRole('button', { name: 'New key pair', exact: true }), [
      page.getByRole('link', { name: 'Connect a device', exact: true }),
    ]);
    await shot('key-pairs-actions');
    await assertAccessible(page, 'the Key pairs page');
  });

  it('then no page reported a Content-Security-Policy refusal or an uncaught error', () => {
    assert.deepEqual(problems.flat(), []);
  });
});
