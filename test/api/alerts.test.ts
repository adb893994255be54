import assert from 'node:assert/strict';
import { it } from 'node:test';
import { createKeyPair, Device } from '../support/device.ts';
import {
  assertTokenRequired,
  childOrganisation,
  THING_FIELDS,
  unique,
  userWithAbilities,
} from '../support/fixtures.ts';
import { MqttDevice } from '../support/mqtt-device.ts';
import { freePort } from '../support/ports.ts';
import { describeOnStores } from '../support/suites.ts';

describeOnStores(
  'alerts',
  (ctx) => {
    async function device() {
      return new Device(ctx.api.url, await createKeyPair(ctx.api, await ctx.api.adminToken()));
    }

    async function registeredThing(d: Device, name = 'Boiler') {
      const key = unique('al');
      assert.equal((await d.register({ thing_key: key, name })).status, 200);
      return key;
    }

    const raise = (d: Device, alert: object) => d.post('/api/v3/alerts.json', { alert });

    it('when a device raises an alert over HTTP then it is listed with the thing as it was then', async () => {
      const d = await device();
      const key = await registeredThing(d);
      const raised = await raise(d, {
        thing_key: key,
        message: 'Pressure high',
        alert_type: 2,
        timestamp: 1_700_000_000_000,
        // What only the server puts in an alert's data is not taken from a device.
        data: { pressure: 9.5, instruction: { x: 1 }, rule_key: 'zz', rule_name: 'fake' },
      });
      assert.equal(raised.status, 200, raised.text);
      assert.deepEqual(raised.body, {});
      const token = await ctx.api.adminToken();
      // Renaming the thing afterwards does not change what the alert recorded.
      await ctx.api.request('PUT', `/api/v3/things/${key}`, { token, body: { thing: { name: 'Renamed' } } });
      const list = await ctx.api.request('GET', '/api/v3/alerts', { token, query: { thing_key: key } });
      assert.equal(list.status, 200, list.text);
      assert.equal(list.body.total_count, 1);
      assert.equal(list.body.page, 1);
      const alert = list.body.alerts[0];
      assert.equal(alert.message, 'Pressure high');
      assert.equal(alert.alert_type, 2);
      assert.equal(alert.alert_type_string, 'Error');
      assert.equal(alert.timestamp, 1_700_000_000);
      assert.equal(alert.thing_key, key);
      assert.equal(alert.thing_name, 'Boiler');
      assert.equal(alert.instruction_key, undefined);
      assert.equal(alert.data.thing.name, 'Boiler');
      assert.equal(alert.data.thing.thing_key, key);
      assert.equal(alert.data.alert_type_string, 'Error');
      assert.equal(alert.data.pressure, 9.5);
      assert.deepEqual(
        [alert.data.instruction, alert.data.rule_key, alert.data.rule_name, alert.rule_key],
        [undefined, undefined, undefined, null],
      );
      assert.deepEqual(Object.keys(alert.data.thing).sort(), THING_FIELDS);
      const one = await ctx.api.request('GET', `/api/v3/alerts/${alert.alert_key}`, {
        token,
        query: { timestamp_format: 'str', time_zone: 'Mumbai' },
      });
      assert.equal(one.status, 200, one.text);
      assert.equal(one.body.alert.timestamp, '2023/11/15 03:43:20');
      assert.match(one.body.alert.data.thing.created_at, /^\d{4}\/\d{2}\/\d{2} \d{2}:\d{2}:\d{2}$/);
    });

    it('when alerts are listed then alert_type, search, scope and paging filter them', async () => {
      const d = await device();
      const key = await registeredThing(d, 'Kiln');
      for (const [type, message] of [
        [0, 'door opened'],
        [1, 'temperature rising'],
        [3, 'temperature critical'],
        [1, 'door left open'],
      ] as const) {
        assert.equal((await raise(d, { thing_key: key, message, alert_type: type })).status, 200);
      }
      const token = await ctx.api.adminToken();
      const list = (query: Record<string, unknown>) =>
        ctx.api.request('GET', '/api/v3/alerts', { token, query: { thing_key: key, ...query } });
      assert.equal((await list({})).body.total_count, 4);
      assert.equal((await list({ alert_type: '1,3' })).body.total_count, 3);
      const viaBody = await ctx.api.request('GET', '/api/v3/alerts', {
        token,
        body: { thing_key: key, alert_type: [0] },
      });
      assert.equal(viaBody.body.total_count, 1);
      assert.equal(viaBody.body.alerts[0].message, 'door opened');
      assert.equal((await list({ search: 'door' })).body.total_count, 2);
      assert.equal((await list({ search: 'door warning' })).body.total_count, 1, 'type names are searchable');
      assert.equal((await list({ search: 'door critical', scope: 'any' })).body.total_count, 3);
      const paged = await list({ per: 3, page: 2, order_by: 'alert_type', order: 'asc' });
      assert.equal(paged.body.total_count, 4);
      assert.equal(paged.body.alerts.length, 1);
      assert.equal(paged.body.alerts[0].alert_type, 3);
      const bad = await list({ alert_type: '7' });
      assert.equal(bad.status, 400, bad.text);
      assert.match(bad.body.errors[0].param, /^alert_type/);
      assert.equal((await list({ order_by: 'secret' })).status, 400);
    });

    it('when a device sends an alert naming an existing alert_key then that alert is updated, not another added', async () => {
      const d = await device();
      const key = await registeredThing(d);
      assert.equal((await raise(d, { thing_key: key, message: 'started', alert_type: 0 })).status, 200);
      const token = await ctx.api.adminToken();
      const listed = async () =>
        (await ctx.api.request('GET', '/api/v3/alerts', { token, query: { thing_key: key } })).body;
      const alertKey = (await listed()).alerts[0].alert_key;
      const viaPost = await raise(d, { alert_key: alertKey, message: 'done', alert_type: 1, data: { step: 2 } });
      assert.equal(viaPost.status, 200, viaPost.text);
      const viaPut = await d.put(`/api/v3/alerts/${alertKey}.json`, {
        alert: { message: 'checked', alert_type: 0, data: { execution_status: 'success' } },
      });
      assert.equal(viaPut.status, 200, viaPut.text);
      const body = await listed();
      assert.equal(body.total_count, 1);
      assert.equal(body.alerts[0].message, 'checked');
      assert.equal(body.alerts[0].data.execution_status, 'success');
      assert.equal(body.alerts[0].data.thing.thing_key, key, 'data.thing is kept');
      const unknown = await d.put('/api/v3/alerts/nosuchalert', { alert: { message: 'x', alert_type: 0 } });
      assert.equal(unknown.status, 404, unknown.text);
    });

    it('when a device alert is malformed or names an unknown thing then it is refused and nothing is stored', async () => {
      const d = await device();
      const key = await registeredThing(d);
      const noMessage = await raise(d, { thing_key: key, alert_type: 1 });
      assert.equal(noMessage.status, 400, noMessage.text);
      assert.equal(typeof noMessage.body.errors[0].code, 'string');
      assert.equal((await raise(d, { thing_key: key, message: 'x', alert_type: 4 })).status, 400);
      const unknown = await raise(d, { thing_key: 'no-such-thing', message: 'x', alert_type: 1 });
      assert.equal(unknown.status, 404, unknown.text);
      const noThing = await raise(d, { message: 'x', alert_type: 1 });
      assert.equal(noThing.status, 400, noThing.text);
      const badSignature = await d.post(
        '/api/v3/alerts.json',
        { alert: { thing_key: key, message: 'x', alert_type: 1 } },
        {
          signature: '0'.repeat(64),
        },
      );
      assert.equal(badSignature.status, 401);
      const token = await ctx.api.adminToken();
      const list = await ctx.api.request('GET', '/api/v3/alerts', { token, query: { thing_key: key } });
      assert.equal(list.body.total_count, 0);
    });

    it('when a device publishes an alert over MQTT then it is acknowledged and listed', async () => {
      const keyPair = await createKeyPair(ctx.api, await ctx.api.adminToken());
      const d = new Device(ctx.api.url, keyPair);
      const key = await registeredThing(d);
      const mqttDevice = await MqttDevice.connect(`mqtt://127.0.0.1:${ctx.api.server.mqttPort}`, keyPair);
      try {
        const ack = await mqttDevice.send('alert', { alert: { thing_key: key, message: 'over MQTT', alert_type: 1 } });
        assert.equal(ack.http_code, 200, JSON.stringify(ack));
        const bad = await mqttDevice.send('alert', { alert: { thing_key: key, alert_type: 1 } });
        assert.equal(bad.http_code, 400, JSON.stringify(bad));
      } finally {
        await mqttDevice.close();
      }
      const token = await ctx.api.adminToken();
      const list = await ctx.api.request('GET', '/api/v3/alerts', { token, query: { thing_key: key } });
      assert.equal(list.body.total_count, 1);
      assert.equal(list.body.alerts[0].message, 'over MQTT');
    });

    it('when a key pair role lacks alert create then a device alert is a 403', async () => {
      const token = await ctx.api.adminToken();
      const role = await ctx.api.request('POST', '/api/v3/roles', {
        token,
        body: { role: { name: unique('noalerts'), abilities: [11, 12, 122] } },
      });
      const limited = new Device(
        ctx.api.url,
        await createKeyPair(ctx.api, token, { role_key: role.body.role.role_key }),
      );
      const key = await registeredThing(await device());
      const refused = await raise(limited, { thing_key: key, message: 'x', alert_type: 0 });
      assert.equal(refused.status, 403, refused.text);
    });

    it('when another organisation or a user without alert read asks then it sees nothing', async () => {
      const d = await device();
      const key = await registeredThing(d);
      await raise(d, { thing_key: key, message: 'private', alert_type: 0 });
      const token = await ctx.api.adminToken();
      const alertKey = (await ctx.api.request('GET', '/api/v3/alerts', { token, query: { thing_key: key } })).body
        .alerts[0].alert_key;
      const child = await childOrganisation(ctx.api, token);
      const childList = await ctx.api.request('GET', '/api/v3/alerts', { token: child.token });
      assert.equal(childList.body.total_count, 0);
      assert.equal((await ctx.api.request('GET', `/api/v3/alerts/${alertKey}`, { token: child.token })).status, 404);
      const reader = await userWithAbilities(ctx.api, token, [11]);
      assert.equal((await ctx.api.request('GET', '/api/v3/alerts', { token: reader.token })).status, 403);
      assert.equal((await ctx.api.request('GET', `/api/v3/alerts/${alertKey}`, { token: reader.token })).status, 403);
      const nonOem = await ctx.api.request('GET', '/api/v3/alerts', { token: child.token, query: { is_oem: true } });
      assert.equal(nonOem.status, 403);
      await assertTokenRequired(ctx.api, [
        ['GET', '/api/v3/alerts'],
        ['GET', `/api/v3/alerts/${alertKey}`],
      ]);
    });

    it('when an OEM admin lists with is_oem then alerts of child organisations are included', async () => {
      const token = await ctx.api.adminToken();
      const child = await childOrganisation(ctx.api, token);
      const childDevice = new Device(ctx.api.url, await createKeyPair(ctx.api, child.token));
      const key = await registeredThing(childDevice);
      assert.equal((await raise(childDevice, { thing_key: key, message: 'child alert', alert_type: 0 })).status, 200);
      const own = await ctx.api.request('GET', '/api/v3/alerts', { token, query: { thing_key: key } });
      assert.equal(own.body.total_count, 0);
      const oem = await ctx.api.request('GET', '/api/v3/alerts', { token, query: { thing_key: key, is_oem: true } });
      assert.equal(oem.body.total_count, 1);
      const alertKey = oem.body.alerts[0].alert_key;
      assert.equal((await ctx.api.request('GET', `/api/v3/alerts/${alertKey}`, { token })).status, 404);
      const one = await ctx.api.request('GET', `/api/v3/alerts/${alertKey}`, { token, query: { is_oem: true } });
      assert.equal(one.status, 200, one.text);
    });
  },
  { env: async () => ({ MQTT_PORT: String(await freePort()) }) },
);
