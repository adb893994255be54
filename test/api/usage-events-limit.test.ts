import assert from 'node:assert/strict';
import { it } from 'node:test';
import { childOrganisation } from '../support/fixtures.ts';
import { describeOnStores } from '../support/suites.ts';

const SERVER_DEFAULT = 50;
const PER_KEY_PAIR = 30;

/**
 * Usage says the events-a-second limit an organisation is under, whether it is its own or the
 * server's EVENTS_PER_SECOND_PER_ORGANISATION, and the server's EVENTS_PER_SECOND_PER_KEY_PAIR
 * (docs/api.md, "Rate limits and usage").
 */
describeOnStores(
  'the events limit in usage',
  (ctx) => {
    const usageOf = async (token: string) => {
      const response = await ctx.api.request('GET', '/api/v3/usage', { token });
      assert.equal(response.status, 200, response.text);
      const { events_per_second_limit: limit, events_per_second_limit_source: source } = response.body.usage;
      assert.equal(
        response.body.usage.events_per_second_per_key_pair_limit,
        PER_KEY_PAIR,
        'the same for every organisation',
      );
      return { limit, source };
    };

    it('when an organisation has no events limit of its own then usage reports the server default as the one in force', async () => {
      const admin = await ctx.api.adminToken();
      assert.deepEqual(await usageOf(admin), { limit: SERVER_DEFAULT, source: 'server_default' });
      const child = await childOrganisation(ctx.api, admin);
      assert.deepEqual(await usageOf(child.token), { limit: SERVER_DEFAULT, source: 'server_default' });
    });

    it('when a parent sets, lifts and clears a child’s events_per_second then the child’s usage follows', async () => {
      const admin = await ctx.api.adminToken();
      const child = await childOrganisation(ctx.api, admin);
      const set = async (value: number | null) => {
        const response = await ctx.api.request('PUT', `/api/v3/organisations/${child.organisationKey}`, {
          token: admin,
          body: { organisation: { events_per_second: value } },
        });
        assert.equal(response.status, 200, response.text);
      };
      await set(10);
      assert.deepEqual(await usageOf(child.token), { limit: 10, source: 'organisation' });
      await set(0);
      assert.deepEqual(await usageOf(child.token), { limit: 0, source: 'organisation' });
      await set(null);
      assert.deepEqual(await usageOf(child.token), { limit: SERVER_DEFAULT, source: 'server_default' });
    });
  },
  {
    env: {
      EVENTS_PER_SECOND_PER_ORGANISATION: String(SERVER_DEFAULT),
      EVENTS_PER_SECOND_PER_KEY_PAIR: String(PER_KEY_PAIR),
    },
  },
);
