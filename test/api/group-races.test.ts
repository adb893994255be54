/**
 * Deleting a thing while a static group is made with it as a member: the group is refused (400, the
 * thing is gone) or the thing's membership goes with it, so no group ever lists a thing that does not
 * exist. PostgreSQL runs the two transactions side by side, so without row locks the group could keep
 * the member; SQLite has one writer at a time.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { createThing, unique } from '../support/fixtures.ts';
import { describeOnStores } from '../support/suites.ts';

const ROUNDS = 20;

describeOnStores('group races', (ctx) => {
  it('when a thing is deleted while a static group is made with it then no group keeps the member', async () => {
    const token = await ctx.api.adminToken();
    const outcomes = { refused: 0, made: 0 };
    for (let round = 0; round < ROUNDS; round++) {
      const thing = await createThing(ctx.api, token, {});
      const [deleted, grouped] = await Promise.all([
        ctx.api.request('DELETE', `/api/v3/things/${thing.thing_key}`, { token }),
        ctx.api.request('POST', '/api/v3/groups', {
          token,
          body: { group: { name: unique('race'), group_type: 1, thing_keys: [thing.thing_key] } },
        }),
      ]);
      const both = `round ${round}: DELETE ${deleted.status} ${deleted.text}; group ${grouped.status} ${grouped.text}`;
      assert.equal(deleted.status, 200, both);
      if (grouped.status === 200) outcomes.made++;
      else {
        outcomes.refused++;
        assert.equal(grouped.status, 400, both);
        assert.equal(grouped.body.errors[0].code, 'not_found', both);
        assert.equal(grouped.body.errors[0].param, 'group.thing_keys', both);
      }
    }
    assert.equal(outcomes.made + outcomes.refused, ROUNDS);
    const db = ctx.api.server.store.db;
    const things = new Set((await db.selectFrom('things').select('thing_key').execute()).map((t) => t.thing_key));
    const members = await db.selectFrom('group_things').select(['group_key', 'thing_key']).execute();
    assert.deepEqual(
      members.filter((m) => !things.has(m.thing_key)).map((m) => `${m.group_key} lists ${m.thing_key}`),
      [],
      'no group lists a thing that does not exist',
    );
  });
});
