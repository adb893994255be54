import assert from 'node:assert/strict';
import { it } from 'node:test';
import { childOrganisation, userWithAbilities } from '../support/fixtures.ts';
import { eventually } from '../support/peers.ts';
import { describeOnStores } from '../support/suites.ts';

describeOnStores('the demo of simulated machines', (ctx) => {
  it('when the demo starts then simulated things send readings, and a stop removes its key pair but keeps the things', async () => {
    const token = await ctx.api.adminToken();
    const before = await ctx.api.request('GET', '/api/v3/demo', { token });
    assert.equal(before.status, 200, before.text);
    assert.equal(before.body.demo.running, false, 'never on by default');

    const started = await ctx.api.request('POST', '/api/v3/demo', { token, body: { demo: { devices: 3, rate: 5 } } });
    assert.equal(started.status, 200, started.text);
    assert.equal(started.body.demo.running, true);
    assert.equal(started.body.demo.simulated, true);
    const keys = started.body.demo.thing_keys as string[];
    const prefix = /^(demo-[0-9a-z]+)-1$/.exec(keys[0] ?? '')?.[1];
    assert.ok(prefix, keys.join(', '));
    assert.deepEqual(keys, [`${prefix}-1`, `${prefix}-2`, `${prefix}-3`]);

    await eventually(async () => {
      const things = await ctx.api.request('GET', '/api/v3/things', { token, query: { search: 'demo' } });
      return (
        things.body.things.filter(
          (t: { description: string; last_event: unknown }) => t.description.includes('Simulated') && t.last_event,
        ).length === 3
      );
    }, 'three simulated things with readings');
    const thing = await ctx.api.request('GET', `/api/v3/things/${keys[1]}`, { token });
    assert.equal(thing.body.thing.name, 'Simulated machine 2');
    assert.match(thing.body.thing.description, /not a real device/);
    assert.equal(typeof thing.body.thing.last_event.data.temperature, 'number');
    // Its template gives the readings their units; over HTTP in process it takes no instructions.
    assert.equal(thing.body.thing.thing_template_name, 'Demo machine');
    assert.equal(thing.body.thing.bi_directional, false);
    const template = await ctx.api.request('GET', `/api/v3/thing_templates/${thing.body.thing.thing_template_key}`, {
      token,
    });
    assert.deepEqual(
      template.body.thing_template.metrics.map((m: { name: string; unit?: string }) => [m.name, m.unit || null]),
      [
        ['temperature', '°C'],
        ['humidity', '%'],
        ['parts', 'parts'],
        ['state', null],
      ],
    );

    const again = await ctx.api.request('POST', '/api/v3/demo', { token, body: {} });
    assert.equal(again.status, 409, again.text);

    const pairs = await ctx.api.request('GET', '/api/v3/key_pairs', { token, query: { search: 'Demo' } });
    assert.equal(pairs.body.key_pairs.length, 1, 'the demo signs with a key pair of its own');

    const stopped = await ctx.api.request('DELETE', '/api/v3/demo', { token });
    assert.equal(stopped.status, 200, stopped.text);
    assert.equal(stopped.body.demo.running, false);
    const after = await ctx.api.request('GET', '/api/v3/key_pairs', { token, query: { search: 'Demo' } });
    assert.equal(after.body.key_pairs.length, 0, 'its key pair is gone with it');
    const kept = await ctx.api.request('GET', `/api/v3/things/${keys[0]}`, { token });
    assert.equal(kept.status, 200, 'the things and their readings stay');
    const audit = await ctx.api.request('GET', '/api/v3/audit_trails', { token, query: { entity_type: 'KeyPair' } });
    const actions = audit.body.audit_trails
      .filter((a: { entity_name: string }) => a.entity_name === 'Demo (simulated machines)')
      .map((a: { action_taken: string }) => a.action_taken)
      .sort();
    assert.deepEqual(actions, ['create', 'delete']);
  });

  it('when two starts come at once then one starts the demo and the other is a 409, with one key pair made', async () => {
    const token = await ctx.api.adminToken();
    const starts = await Promise.all(
      [1, 2].map(() => ctx.api.request('POST', '/api/v3/demo', { token, body: { demo: { devices: 1 } } })),
    );
    try {
      assert.deepEqual(starts.map((s) => s.status).sort(), [200, 409], starts.map((s) => s.text).join('\n'));
      const pairs = await ctx.api.request('GET', '/api/v3/key_pairs', { token, query: { search: 'Demo' } });
      assert.equal(pairs.body.key_pairs.length, 1, 'one key pair, of the demo that runs');
    } finally {
      assert.equal((await ctx.api.request('DELETE', '/api/v3/demo', { token })).status, 200);
    }
    const after = await ctx.api.request('GET', '/api/v3/key_pairs', { token, query: { search: 'Demo' } });
    assert.equal(after.body.key_pairs.length, 0, 'none left behind');
  });

  it('when two organisations run the demo then each has things of its own', async () => {
    const admin = await ctx.api.adminToken();
    const child = await childOrganisation(ctx.api, admin);
    const own = await ctx.api.request('POST', '/api/v3/demo', { token: admin, body: { demo: { devices: 2 } } });
    assert.equal(own.status, 200, own.text);
    const theirs = await ctx.api.request('POST', '/api/v3/demo', {
      token: child.token,
      body: { demo: { devices: 2 } },
    });
    assert.equal(theirs.status, 200, theirs.text);
    const ownKeys = own.body.demo.thing_keys as string[];
    const theirKeys = theirs.body.demo.thing_keys as string[];
    assert.deepEqual(
      ownKeys.filter((key) => theirKeys.includes(key)),
      [],
    );
    assert.ok(theirKeys.every((key) => key.includes(child.organisationKey)));
    const seen = await ctx.api.request('GET', `/api/v3/things/${theirKeys[0]}`, { token: child.token });
    assert.equal(seen.status, 200, seen.text);
    assert.equal((await ctx.api.request('DELETE', '/api/v3/demo', { token: admin })).status, 200);
    assert.equal((await ctx.api.request('DELETE', '/api/v3/demo', { token: child.token })).status, 200);
  });

  it('when a role may only read things then it may see the demo but not start it', async () => {
    const admin = await ctx.api.adminToken();
    const reader = await userWithAbilities(ctx.api, admin, [11]);
    assert.equal((await ctx.api.request('GET', '/api/v3/demo', { token: reader.token })).status, 200);
    const refused = await ctx.api.request('POST', '/api/v3/demo', { token: reader.token, body: {} });
    assert.equal(refused.status, 403, refused.text);
    const tooMany = await ctx.api.request('POST', '/api/v3/demo', { token: admin, body: { demo: { devices: 21 } } });
    assert.equal(tooMany.status, 400, tooMany.text);
    assert.match(tooMany.body.errors[0].param ?? tooMany.text, /devices/);
  });

  it('when a role may start the demo but not make templates then its things register into the Default template', async () => {
    // An organisation of its own: none of the demo's templates made by the tests above.
    const admin = (await childOrganisation(ctx.api, await ctx.api.adminToken())).token;
    // What the Agent role holds (things, alert and data creation) and key pairs, but no templates.
    const user = await userWithAbilities(ctx.api, admin, [15, 92, 122, 135]);
    const started = await ctx.api.request('POST', '/api/v3/demo', {
      token: user.token,
      body: { demo: { devices: 1, rate: 5 } },
    });
    assert.equal(started.status, 200, started.text);
    try {
      const key = started.body.demo.thing_keys[0] as string;
      await eventually(async () => {
        const thing = await ctx.api.request('GET', `/api/v3/things/${key}`, { token: admin });
        return thing.status === 200 && thing.body.thing.last_event !== null;
      }, 'the thing with a reading');
      const thing = await ctx.api.request('GET', `/api/v3/things/${key}`, { token: admin });
      assert.equal(thing.body.thing.thing_template_name, 'Default');
      assert.equal(thing.body.thing.bi_directional, false);
    } finally {
      await ctx.api.request('DELETE', '/api/v3/demo', { token: user.token });
    }
  });

  it('when a role may create things but not grant the Agent role then starting the demo is refused', async () => {
    const admin = await ctx.api.adminToken();
    // Things: everything; no data or alert creation, which the demo's key pair (Agent) needs.
    const user = await userWithAbilities(ctx.api, admin, [15]);
    const refused = await ctx.api.request('POST', '/api/v3/demo', { token: user.token, body: {} });
    assert.equal(refused.status, 403, refused.text);
    const status = await ctx.api.request('GET', '/api/v3/demo', { token: user.token });
    assert.equal(status.body.demo.running, false, 'nothing was left running');
  });
});
