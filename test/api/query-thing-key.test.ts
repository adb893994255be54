import assert from 'node:assert/strict';
import { it } from 'node:test';
import { createThing, unique } from '../support/fixtures.ts';
import { describeOnStores } from '../support/suites.ts';

const BASE = Date.UTC(2024, 2, 4);
const MINUTE = 60_000;

/**
 * `thing_key`, the one-thing parameter of `thing_data`, names the thing of the aggregations too: a
 * shorthand for `thing_keys: [thing_key]` (docs/api.md, "Data queries"), never ignored.
 */
describeOnStores('thing_key in the aggregation queries', (ctx) => {
  const query = async (path: string, body: object) =>
    ctx.api.request('POST', `/api/v3/query/${path}`, { token: await ctx.api.adminToken(), body });

  async function thingWith(value: number) {
    const token = await ctx.api.adminToken();
    const thing = await createThing(ctx.api, token, { name: unique('meter') });
    const posted = await ctx.api.request('POST', `/api/v3/things/${thing.thing_key}/events`, {
      token,
      body: { events: [{ timestamp: BASE + MINUTE, data: { level: value } }] },
    });
    assert.equal(posted.status, 200, posted.text);
    return thing.thing_key;
  }

  const range = { from: BASE / 1000, to: (BASE + 10 * MINUTE) / 1000, metrics: ['level'] };

  it('when thing_aggregated_data is given thing_key then it aggregates that thing alone, as thing_keys of it does', async () => {
    const one = await thingWith(5);
    await thingWith(7);
    const byKey = await query('thing_aggregated_data', { ...range, thing_key: one });
    assert.equal(byKey.status, 200, byKey.text);
    assert.deepEqual(Object.keys(byKey.body.thing_wise_result), [one]);
    assert.deepEqual(byKey.body.summary_result.level, { count: 1, sum: 5, min: 5, max: 5, avg: 5 });
    const byKeys = await query('thing_aggregated_data', { ...range, thing_keys: [one] });
    assert.deepEqual(byKey.body, byKeys.body);

    const inQuery = await ctx.api.request(
      'POST',
      `/api/v3/query/thing_aggregated_data?thing_key=${one}&from=${range.from}&to=${range.to}&metrics=level`,
      { token: await ctx.api.adminToken() },
    );
    assert.equal(inQuery.status, 200, inQuery.text);
    assert.deepEqual(Object.keys(inQuery.body.thing_wise_result), [one]);
  });

  it('when fleet_aggregated_data is given thing_key then it counts that thing alone', async () => {
    const one = await thingWith(11);
    await thingWith(13);
    const response = await query('fleet_aggregated_data', { ...range, thing_key: one });
    assert.equal(response.status, 200, response.text);
    assert.equal(response.body.thing_count, 1);
    assert.deepEqual(response.body.summary_result.level, { count: 1, sum: 11, min: 11, max: 11, avg: 11 });
  });

  it('when thing_key names no thing the caller can see then both aggregations answer 404, as thing_keys does, each naming its parameter', async () => {
    for (const path of ['thing_aggregated_data', 'fleet_aggregated_data']) {
      const byKey = await query(path, { ...range, thing_key: 'no-such-thing' });
      const byKeys = await query(path, { ...range, thing_keys: ['no-such-thing'] });
      assert.equal(byKey.status, 404, `${path}: ${byKey.text}`);
      assert.equal(byKeys.status, 404, `${path}: ${byKeys.text}`);
      // The same answer, each naming the parameter it was given.
      const withoutParam = (body: { errors: { param?: string }[] }) => ({
        ...body,
        errors: body.errors.map(({ param: _, ...error }) => error),
      });
      assert.deepEqual(withoutParam(byKey.body), withoutParam(byKeys.body));
      assert.deepEqual([byKey.body.errors[0].param, byKeys.body.errors[0].param], ['thing_key', 'thing_keys'], path);
    }
  });

  it('when thing_key and thing_keys are both given then the answer is a 400 naming both', async () => {
    const one = await thingWith(1);
    for (const path of ['thing_aggregated_data', 'fleet_aggregated_data']) {
      const response = await query(path, { ...range, thing_keys: [one], thing_key: one });
      assert.equal(response.status, 400, `${path}: ${response.text}`);
      assert.equal(response.body.success, false);
      assert.deepEqual(response.body.errors, [
        { code: 'invalid', param: 'thing_key', message: 'only one of thing_keys, thing_key may be given' },
      ]);
    }
  });

  it('when fleet_aggregated_data is given thing_key with a template then the answer is a 400 naming both', async () => {
    const one = await thingWith(1);
    const things = await ctx.api.request('GET', `/api/v3/things/${one}`, { token: await ctx.api.adminToken() });
    const response = await query('fleet_aggregated_data', {
      ...range,
      thing_key: one,
      thing_template_key: things.body.thing.thing_template_key,
    });
    assert.equal(response.status, 400, response.text);
    assert.deepEqual(response.body.errors, [
      {
        code: 'invalid',
        param: 'thing_template_key',
        message: 'only one of thing_key, thing_template_key may be given',
      },
    ]);
  });
});
