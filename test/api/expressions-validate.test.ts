/**
 * `POST /api/v3/expressions/validate` (docs/expressions.md, "Checking an expression"): editors check a
 * rule condition or group expression as it is typed and get the message a save would answer.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeOnStores } from '../support/suites.ts';

describeOnStores('expressions validate', (ctx) => {
  const validate = async (body: unknown, token?: string) =>
    ctx.api.request('POST', '/api/v3/expressions/validate', { token: token ?? (await ctx.api.adminToken()), body });

  it('when a rule condition or group expression is well formed then the answer is valid', async () => {
    const rule = await validate({ expression: "temperature > 80 and thing.name == 'boiler'", kind: 'rule' });
    assert.equal(rule.status, 200, rule.text);
    assert.deepEqual(rule.body, { valid: true, metrics: ['temperature'] });
    const group = await validate({ expression: "tags contains 'boiler'", kind: 'group' });
    assert.deepEqual(group.body, { valid: true });
  });

  it('when a rule condition is valid then the answer lists the metrics it reads, once each, nested paths dotted, thing fields left out', async () => {
    const rule = await validate({
      expression: "machine.status == 'on' and (temperature > 80 or temperature < 2) and thing.tags contains 'x'",
      kind: 'rule',
    });
    assert.equal(rule.status, 200, rule.text);
    assert.deepEqual(rule.body, { valid: true, metrics: ['machine.status', 'temperature'] });
    const none = await validate({ expression: "thing.name == 'boiler'", kind: 'rule' });
    assert.deepEqual(none.body, { valid: true, metrics: [] });
  });

  it('when the text is malformed then a 400 names the position, as a save would', async () => {
    const bad = await validate({ expression: 'temperature > ', kind: 'rule' });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.success, false);
    assert.equal(bad.body.errors[0].param, 'expression');
    assert.match(bad.body.message, /position \d+/);
  });

  it('when a name does not belong to the kind then it is a 400 (a group expression names thing fields only)', async () => {
    const bad = await validate({ expression: 'temperature > 3', kind: 'group' });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.errors[0].code, 'invalid');
  });

  it('when kind is missing or unknown, or no token is sent, then it is refused', async () => {
    assert.equal((await validate({ expression: 'a > 1' })).status, 400);
    assert.equal((await validate({ expression: 'a > 1', kind: 'sql' })).status, 400);
    const anonymous = await ctx.api.request('POST', '/api/v3/expressions/validate', {
      body: { expression: 'a > 1', kind: 'rule' },
    });
    assert.equal(anonymous.status, 401);
  });
});
