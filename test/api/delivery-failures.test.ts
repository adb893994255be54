/**
 * Notification deliveries that fail, that stop being tried, that go to peers asking for a login or
 * answering at length, and actions moved between organisations: what the worker and the senders do,
 * seen from the peers and from the recorded attempts.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, it } from 'node:test';
import { childOrganisation, createThing, unique } from '../support/fixtures.ts';
import { eventually, startHttpPeer, startSmtpPeer } from '../support/peers.ts';
import type { TestServer } from '../support/server.ts';
import { describeOnStores } from '../support/suites.ts';

interface Attempt {
  status: string;
  error: string | null;
}

async function attemptsOf(api: TestServer, token: string, actionKey: string, query = {}): Promise<Attempt[]> {
  const list = await api.request('GET', `/api/v3/notification_actions/${actionKey}/deliveries`, { token, query });
  assert.equal(list.status, 200, list.text);
  return list.body.deliveries as Attempt[];
}

/** A thing of the token's organisation, and a rule on it firing at every event whose `v` is over 1. */
async function thingAndRule(api: TestServer, token: string, rule: Record<string, unknown> = {}) {
  const thing = await createThing(api, token, {});
  const created = await api.request('POST', '/api/v3/rules', {
    token,
    body: {
      rule: {
        name: unique('rule'),
        condition: 'v > 1',
        trigger: 'every_event',
        thing_keys: [thing.thing_key],
        ...rule,
      },
    },
  });
  assert.equal(created.status, 200, created.text);
  return { thing, ruleKey: created.body.rule.rule_key as string, ruleName: created.body.rule.name as string };
}

async function addAction(api: TestServer, token: string, ruleKey: string, action: Record<string, unknown>) {
  const made = await api.request('POST', '/api/v3/notification_actions', {
    token,
    body: { notification_action: { rule_key: ruleKey, ...action } },
  });
  assert.equal(made.status, 200, made.text);
  return made.body.notification_action.notification_action_key as string;
}

async function sendEvent(api: TestServer, token: string, thingKey: string, data: Record<string, unknown>) {
  const sent = await api.request('POST', `/api/v3/things/${thingKey}/events`, { token, body: { events: [{ data }] } });
  assert.equal(sent.status, 200, sent.text);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let webhook: Awaited<ReturnType<typeof startHttpPeer>>;
/** Answers every request with 100 KiB, more than a sender reads of an answer. */
let talkative: { url: string; received: { method: string; url: string; headers: IncomingHttpHeaders; body: string }[] };
const talkativeServer = createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    talkative.received.push({
      method: request.method ?? '',
      url: request.url ?? '',
      headers: request.headers,
      body: Buffer.concat(chunks).toString(),
    });
    response.on('error', () => {});
    response.writeHead(200, { 'content-type': 'text/plain' }).end('x'.repeat(100 * 1024));
  });
});
before(async () => {
  webhook = await startHttpPeer();
  talkativeServer.listen(0, '127.0.0.1');
  await once(talkativeServer, 'listening');
  talkative = { url: `http://127.0.0.1:${(talkativeServer.address() as AddressInfo).port}`, received: [] };
});
after(async () => {
  await webhook.close();
  talkativeServer.closeAllConnections();
  await new Promise((resolve) => talkativeServer.close(resolve));
});

describeOnStores(
  'notification deliveries that fail or are moved',
  (ctx) => {
    it('when SMTP_URL and SMS_URL are not set then e-mail and SMS deliveries fail with the reason, DELIVERY_MAX_ATTEMPTS times and no more', async () => {
      const token = await ctx.api.adminToken();
      const { thing, ruleKey } = await thingAndRule(ctx.api, token);
      const email = await addAction(ctx.api, token, ruleKey, {
        type: 'EmailNotificationAction',
        to: 'ops@example.com',
      });
      const sms = await addAction(ctx.api, token, ruleKey, {
        type: 'SMSNotificationAction',
        name: 'Night shift',
        phone_number: '+15550100',
      });
      await sendEvent(ctx.api, token, thing.thing_key, { v: 5 });
      for (const actionKey of [email, sms]) {
        await eventually(async () => (await attemptsOf(ctx.api, token, actionKey)).length >= 2, 'two attempts');
      }
      // Retried after 50 ms, then 100 ms, ...: a third attempt would have come by now.
      await sleep(1500);
      const emailAttempts = await attemptsOf(ctx.api, token, email);
      assert.deepEqual(
        emailAttempts.map((a) => a.status),
        ['failed', 'failed'],
      );
      for (const attempt of emailAttempts) assert.match(attempt.error ?? '', /SMTP_URL is not set/);
      const smsAttempts = await attemptsOf(ctx.api, token, sms);
      assert.deepEqual(
        smsAttempts.map((a) => a.status),
        ['failed', 'failed'],
      );
      for (const attempt of smsAttempts) assert.match(attempt.error ?? '', /SMS_URL is not set/);
    });

    it('when an e-mail action stored before recipients were checked holds a line break then it fails at once, never sent nor tried again', async () => {
      const token = await ctx.api.adminToken();
      const { thing, ruleKey } = await thingAndRule(ctx.api, token);
      const actionKey = await addAction(ctx.api, token, ruleKey, {
        type: 'EmailNotificationAction',
        to: 'ops@example.com',
      });
      await ctx.api.server.store.db
        .updateTable('notification_actions')
        .set({ recipient: 'ops@example.com\r\nBcc: someone@example.org' })
        .where('notification_action_key', '=', actionKey)
        .execute();
      await sendEvent(ctx.api, token, thing.thing_key, { v: 5 });
      await eventually(async () => (await attemptsOf(ctx.api, token, actionKey)).length >= 1, 'an attempt');
      // Retried after 50 ms, then 100 ms, ...: a second attempt would have come by now.
      await sleep(1500);
      const attempts = await attemptsOf(ctx.api, token, actionKey);
      assert.deepEqual(
        attempts.map((a) => a.status),
        ['failed'],
      );
      assert.match(attempts[0]?.error ?? '', /recipients are not e-mail addresses/);
    });

    it('when a GET action fires then the peer gets no body, and a long answer is cut off and counts as delivered', async () => {
      const token = await ctx.api.adminToken();
      const { thing, ruleKey } = await thingAndRule(ctx.api, token);
      const actionKey = await addAction(ctx.api, token, ruleKey, {
        type: 'CallHttpUrlAction',
        method: 'get',
        url: `${talkative.url}/status/$THING$`,
        query: { level: 'high' },
        body: 'not sent with GET',
      });
      await sendEvent(ctx.api, token, thing.thing_key, { v: 5 });
      await eventually(async () => (await attemptsOf(ctx.api, token, actionKey)).length >= 1, 'an attempt');
      const [attempt] = await attemptsOf(ctx.api, token, actionKey);
      assert.equal(attempt?.status, 'delivered', JSON.stringify(attempt));
      const calls = talkative.received.filter((r) => r.url.includes(thing.thing_key));
      assert.equal(calls.length, 1);
      assert.equal(calls[0]?.method, 'GET');
      assert.equal(calls[0]?.url, `/status/${thing.thing_key}?level=high`);
      assert.equal(calls[0]?.body, '');
      assert.equal(calls[0]?.headers['content-type'], undefined);
    });

    it('when an OEM admin moves an action to a rule of a child organisation then its deliveries are carried out', async () => {
      const token = await ctx.api.adminToken();
      const child = await childOrganisation(ctx.api, token);
      const own = await thingAndRule(ctx.api, token);
      const theirs = await thingAndRule(ctx.api, child.token);
      const actionKey = await addAction(ctx.api, token, own.ruleKey, {
        type: 'CallHttpUrlAction',
        method: 'POST',
        url: `${webhook.url}/moved/$THING$`,
      });
      const moved = await ctx.api.request('PUT', `/api/v3/notification_actions/${actionKey}`, {
        token,
        body: { is_oem: true, notification_action: { type: 'CallHttpUrlAction', rule_key: theirs.ruleKey } },
      });
      assert.equal(moved.status, 200, moved.text);
      assert.equal(moved.body.notification_action.rule_key, theirs.ruleKey);
      const listed = await ctx.api.request('GET', '/api/v3/notification_actions', {
        token: child.token,
        query: { rule_key: theirs.ruleKey },
      });
      assert.deepEqual(
        listed.body.notification_actions.map((a: { notification_action_key: string }) => a.notification_action_key),
        [actionKey],
        'the child organisation sees the action of its rule',
      );
      await sendEvent(ctx.api, child.token, theirs.thing.thing_key, { v: 5 });
      const calls = () => webhook.received.filter((r) => r.url === `/moved/${theirs.thing.thing_key}`);
      await eventually(() => calls().length >= 1, 'the moved action’s call', 5000);
      // The attempt is recorded once the peer has answered, a moment after the peer has the call.
      let statuses: string[] = [];
      await eventually(async () => {
        statuses = (await attemptsOf(ctx.api, child.token, actionKey)).map((a) => a.status);
        return statuses.length > 0 && statuses.every((status) => status !== 'pending');
      }, 'the attempt recorded');
      assert.deepEqual(statuses, ['delivered']);
    });
  },
  {
    env: {
      ALLOW_PRIVATE_WEBHOOKS: 'true',
      DELIVERY_RETRY_BASE_MS: '50',
      DELIVERY_MAX_ATTEMPTS: '2',
    },
  },
);

// Peers for the next suite, shared by both stores' servers.
const login = { user: 'alerts@example.com', pass: 'mail password' };
let smtp: Awaited<ReturnType<typeof startSmtpPeer>>;
let gateway: Awaited<ReturnType<typeof startHttpPeer>>;
before(async () => {
  smtp = await startSmtpPeer({ login });
  gateway = await startHttpPeer(() => 500);
});
after(async () => {
  await smtp.close();
  await gateway.close();
});

describeOnStores(
  'e-mail through a server asking for a login, SMS through a failing gateway',
  (ctx) => {
    it('when SMTP_URL names a user then it logs in as that user, who is the sender, and a rule without alert type sends a Notice', async () => {
      const token = await ctx.api.adminToken();
      const { thing, ruleKey, ruleName } = await thingAndRule(ctx.api, token, { alert_type: null });
      const actionKey = await addAction(ctx.api, token, ruleKey, {
        type: 'EmailNotificationAction',
        to: 'ops@example.com',
        bcc: 'audit@example.com',
      });
      await sendEvent(ctx.api, token, thing.thing_key, { v: 5 });
      const mine = () => smtp.received.filter((m) => m.raw.includes(thing.name));
      await eventually(() => mine().length >= 1, 'the e-mail');
      const mail = mine()[0];
      assert.ok(mail);
      assert.equal(mail.user, login.user);
      assert.equal(mail.from, login.user);
      assert.deepEqual(mail.to.sort(), ['audit@example.com', 'ops@example.com']);
      assert.doesNotMatch(mail.raw, /^Cc:/m);
      assert.doesNotMatch(mail.raw, /^Bcc:/m, 'blind copies are not written in the message');
      assert.match(mail.raw, new RegExp(`^Subject: \\[Notice\\] ${ruleName}: ${thing.name}`, 'm'));
      assert.match(mail.raw, new RegExp(`${ruleName}: v > 1 \\(${thing.name}\\)`), 'the default message');
      await eventually(async () => (await attemptsOf(ctx.api, token, actionKey)).length === 1, 'the attempt');
      assert.equal((await attemptsOf(ctx.api, token, actionKey))[0]?.status, 'delivered');
    });

    it('when the SMS gateway answers an error then the attempt fails naming the status; an SMS action without body sends the alert message', async () => {
      const token = await ctx.api.adminToken();
      const { thing, ruleKey } = await thingAndRule(ctx.api, token, { alert_message: 'v is {{v}}' });
      const actionKey = await addAction(ctx.api, token, ruleKey, {
        type: 'SMSNotificationAction',
        name: 'Day shift',
        phone_number: '+15550199',
      });
      await sendEvent(ctx.api, token, thing.thing_key, { v: 7 });
      await eventually(async () => (await attemptsOf(ctx.api, token, actionKey)).length >= 1, 'an attempt');
      const [attempt] = await attemptsOf(ctx.api, token, actionKey);
      assert.equal(attempt?.status, 'failed');
      assert.match(attempt?.error ?? '', /the SMS gateway answered 500/);
      const sent = gateway.received.map((r) => JSON.parse(r.body)).filter((b) => b.to === '+15550199');
      assert.ok(sent.length >= 1);
      assert.deepEqual(sent[0], { to: '+15550199', name: 'Day shift', message: 'v is 7' });
    });
  },
  {
    env: () =>
      Promise.resolve({
        SMTP_URL: `smtp://${encodeURIComponent(login.user)}:${encodeURIComponent(login.pass)}@${new URL(smtp.url).host}`,
        SMS_URL: `${gateway.url}/sms`,
        DELIVERY_MAX_ATTEMPTS: '1',
      }),
  },
);

// Peers for the next suite: one that never answers, and one that answers after a while.
const held: { url: string; response: import('node:http').ServerResponse }[] = [];
const hanging = createServer((request, response) => {
  held.push({ url: request.url ?? '', response });
});
/** When each request of the slow peer came, and to which path, by its delivery (Idempotency-Key). */
const slowArrivals = new Map<string, { at: number; url: string }>();
const slow = createServer((request, response) => {
  slowArrivals.set(String(request.headers['idempotency-key']), { at: Date.now(), url: request.url ?? '' });
  request.resume();
  setTimeout(() => response.writeHead(200).end('{}'), 1000);
});
/** Answers 200 at once, then its body a byte every half second, for longer than an attempt may take. */
const trickling: string[] = [];
const trickle = createServer((request, response) => {
  trickling.push(request.url ?? '');
  request.resume();
  response.writeHead(200, { 'content-type': 'text/plain' });
  response.write('.');
  const timer = setInterval(() => response.write('.'), 500);
  response.on('close', () => clearInterval(timer));
});
const urlOf = (server: ReturnType<typeof createServer>) => `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
before(async () => {
  for (const server of [hanging, slow, trickle]) {
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
  }
});
after(async () => {
  for (const server of [hanging, slow, trickle]) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

describeOnStores(
  'deliveries waiting for peers',
  (ctx) => {
    it("when one action's peer hangs then its deliveries hold two lanes at most, and another action's are delivered meanwhile", async () => {
      const token = await ctx.api.adminToken();
      const { thing, ruleKey } = await thingAndRule(ctx.api, token);
      const path = `/${unique('stuck')}`;
      const stuck = await addAction(ctx.api, token, ruleKey, {
        type: 'CallHttpUrlAction',
        method: 'POST',
        url: `${urlOf(hanging)}${path}`,
      });
      const mine = () => held.filter((call) => call.url === path);
      // Ten events: ten deliveries to the peer that hangs, more than the lanes an instance has.
      for (let v = 2; v < 12; v++) await sendEvent(ctx.api, token, thing.thing_key, { v });
      await eventually(() => mine().length >= 2, 'the hanging peer has its first calls');
      await sleep(200);
      assert.equal(mine().length, 2, 'no more than two of one action at once');
      const other = await thingAndRule(ctx.api, token);
      const healthy = await addAction(ctx.api, token, other.ruleKey, {
        type: 'CallHttpUrlAction',
        method: 'POST',
        url: `${webhook.url}/healthy`,
      });
      await sendEvent(ctx.api, token, other.thing.thing_key, { v: 5 });
      // Well within DELIVERY_TIMEOUT (5 s), which the hung calls wait out.
      await eventually(
        async () => (await attemptsOf(ctx.api, token, healthy)).length === 1,
        'the healthy delivery',
        3000,
      );
      assert.equal((await attemptsOf(ctx.api, token, stuck)).length, 0, 'the hung calls are still under way');
      // Its deliveries are cancelled, not tried again against the next suite's.
      const deleted = await ctx.api.request('DELETE', `/api/v3/notification_actions/${stuck}`, { token });
      assert.equal(deleted.status, 200, deleted.text);
      for (const call of mine()) call.response.destroy();
    });

    it('when many actions call one host that hangs then they hold four lanes at most, and a call to another host goes meanwhile', async () => {
      const token = await ctx.api.adminToken();
      const { thing, ruleKey } = await thingAndRule(ctx.api, token);
      const prefix = `/${unique('host')}/`;
      const stuck: string[] = [];
      for (let i = 0; i < 6; i++) {
        stuck.push(
          await addAction(ctx.api, token, ruleKey, {
            type: 'CallHttpUrlAction',
            method: 'POST',
            url: `${urlOf(hanging)}${prefix}${i}`,
          }),
        );
      }
      const mine = () => held.filter((call) => call.url.startsWith(prefix));
      await sendEvent(ctx.api, token, thing.thing_key, { v: 5 });
      await eventually(() => mine().length >= 4, 'the hanging host has its first calls');
      await sleep(300);
      assert.equal(mine().length, 4, 'no more than four calls to one host at once');
      const other = await thingAndRule(ctx.api, token);
      const healthy = await addAction(ctx.api, token, other.ruleKey, {
        type: 'CallHttpUrlAction',
        method: 'POST',
        url: `${webhook.url}/another-host`,
      });
      await sendEvent(ctx.api, token, other.thing.thing_key, { v: 5 });
      await eventually(
        async () => (await attemptsOf(ctx.api, token, healthy)).length === 1,
        'the delivery to another host',
        3000,
      );
      for (const actionKey of stuck) {
        const deleted = await ctx.api.request('DELETE', `/api/v3/notification_actions/${actionKey}`, { token });
        assert.equal(deleted.status, 200, deleted.text);
      }
      for (const call of mine()) call.response.destroy();
    });

    it('when a peer answers 2xx at once and its body slowly then the delivery is delivered at once, and not sent again', async () => {
      const token = await ctx.api.adminToken();
      const { thing, ruleKey } = await thingAndRule(ctx.api, token);
      const path = `/${unique('trickle')}`;
      const action = await addAction(ctx.api, token, ruleKey, {
        type: 'CallHttpUrlAction',
        method: 'POST',
        url: `${urlOf(trickle)}${path}`,
      });
      await sendEvent(ctx.api, token, thing.thing_key, { v: 5 });
      // Well before DELIVERY_TIMEOUT (5 s), which the body's end would take longer than.
      await eventually(
        async () => (await attemptsOf(ctx.api, token, action)).some((a) => a.status === 'delivered'),
        'delivered',
        3000,
      );
      await sleep(5500);
      assert.deepEqual(
        (await attemptsOf(ctx.api, token, action)).map((a) => a.status),
        ['delivered'],
      );
      assert.equal(trickling.filter((url) => url === path).length, 1, 'sent once');
    });

    it('when deliveries wait for a lane then each is claimed as its attempt starts, for as long as one attempt may take', async () => {
      const token = await ctx.api.adminToken();
      const { thing, ruleKey } = await thingAndRule(ctx.api, token);
      // Actions of their own, so that four lanes (as many as one host has) work at once; 24 deliveries.
      const prefix = `/${unique('slow')}/`;
      for (let i = 0; i < 8; i++) {
        await addAction(ctx.api, token, ruleKey, {
          type: 'CallHttpUrlAction',
          method: 'POST',
          url: `${urlOf(slow)}${prefix}${i}`,
        });
      }
      const arrivals = () => [...slowArrivals].filter(([, call]) => call.url.startsWith(prefix));
      const claims = new Map<string, number>();
      const db = ctx.api.server.store.db;
      for (let v = 2; v < 5; v++) await sendEvent(ctx.api, token, thing.thing_key, { v });
      await eventually(
        async () => {
          // Each delivery's claim, read while its request is with the peer.
          for (const [key] of arrivals()) {
            if (claims.has(key)) continue;
            const row = await db
              .selectFrom('deliveries')
              .select(['claimed_until', 'status'])
              .where('delivery_key', '=', key)
              .executeTakeFirst();
            if (row?.claimed_until != null && row.status === 'pending') claims.set(key, Number(row.claimed_until));
          }
          return arrivals().length >= 24;
        },
        'every call',
        20_000,
      );
      // An attempt may take three times DELIVERY_TIMEOUT and 5 s more: a claim shorter than that from
      // the call's start could lapse under it, and another instance send the delivery again.
      const least = Math.min(...[...claims].map(([key, until]) => until - (slowArrivals.get(key)?.at as number)));
      assert.ok(claims.size >= 20, `claims read: ${claims.size}`);
      assert.ok(least >= 3 * 5000 + 5000 - 1000, `a claim left ${least} ms at its call`);
    });
  },
  { env: { ALLOW_PRIVATE_WEBHOOKS: 'true', DELIVERY_TIMEOUT: '5s' } },
);
