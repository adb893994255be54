/**
 * The rule evaluator (src/rules/evaluator.ts) on its own: compiled rules and events in, firings and
 * `on_enter` states out, without a store (docs/rules.md, "How rules are evaluated").
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Candidate, type EnteringPair, enter, evaluate, type Firing } from '../../src/rules/evaluator.ts';
import { type CompiledRule, compileRule, type RuleGroup } from '../../src/rules/rule-set.ts';
import type { NotificationActionRow, RuleRow } from '../../src/store/tables.ts';

function rule(fields: Partial<RuleRow> & { rule_key: string }, group?: RuleGroup): CompiledRule {
  const row: RuleRow = {
    organisation_key: 'org',
    name: fields.rule_key,
    description: '',
    thing_template_key: null,
    thing_keys: '[]',
    group_key: null,
    condition: 'temperature > 80',
    alert_type: 0,
    alert_message: '',
    trigger: 'every_event',
    enabled: 1,
    for_seconds: 0,
    auto_clear: 0,
    created_at: 0,
    updated_at: 0,
    ...fields,
  };
  const compiled = compileRule(row, group, [] as NotificationActionRow[]);
  assert.ok(compiled, `${row.condition} compiles`);
  return compiled;
}

function event(thingKey: string, data: Record<string, unknown>, templateKey = 'template'): Candidate {
  return { event: { timestamp: 0, data }, thingKey, templateKey, order: 0 };
}
/** Candidates in arrival order, numbered from 0. */
function events(...list: Candidate[]): Candidate[] {
  return list.map((c, i) => ({ ...c, event: { ...c.event, timestamp: 1000 + i }, order: i }));
}

const noThing = () => {
  throw new Error('the thing was asked for, though no rule reads it');
};
const fired = (firings: Firing[]) => firings.map((f) => [f.rule.row.rule_key, f.candidate.order]);

describe('rule evaluator: every_event', () => {
  it('when events match then each fires once per rule, in arrival order and rule order, and a missing metric does not match', () => {
    const hot = rule({ rule_key: 'hot' });
    const cold = rule({ rule_key: 'cold', condition: 'temperature < 10' });
    const any = rule({ rule_key: 'any', condition: 'temperature >= 0' });
    const candidates = events(
      event('t1', { temperature: 90 }),
      event('t2', { temperature: 5 }),
      event('t1', { humidity: 50 }),
      event('t2', { temperature: 85 }),
    );
    const verdicts = evaluate([hot, cold, any], candidates, noThing);
    assert.deepEqual(fired(verdicts.firings), [
      ['hot', 0],
      ['any', 0],
      ['cold', 1],
      ['any', 1],
      ['hot', 3],
      ['any', 3],
    ]);
    assert.deepEqual(verdicts.entering, []);
  });

  it('when a rule names a template, things and a group then it watches their union, and no scope watches every thing', () => {
    const scoped = rule(
      { rule_key: 'scoped', thing_template_key: 'boilers', thing_keys: '["listed"]', group_key: 'g' },
      { thingExpression: null, members: ['member'] },
    );
    const everything = rule({ rule_key: 'everything' });
    const candidates = events(
      event('in-template', { temperature: 99 }, 'boilers'),
      event('listed', { temperature: 99 }),
      event('member', { temperature: 99 }),
      event('outside', { temperature: 99 }),
    );
    assert.deepEqual(fired(evaluate([scoped], candidates, noThing).firings), [
      ['scoped', 0],
      ['scoped', 1],
      ['scoped', 2],
    ]);
    assert.deepEqual(fired(evaluate([everything], candidates, noThing).firings), [
      ['everything', 0],
      ['everything', 1],
      ['everything', 2],
      ['everything', 3],
    ]);
  });

  it("when a rule watches a dynamic group then the group's expression is evaluated over the thing", () => {
    const inPune = rule(
      { rule_key: 'pune', group_key: 'g' },
      { thingExpression: "user_defined_properties.site == 'Pune'", members: [] },
    );
    assert.equal(inPune.needsThing, true);
    const things: Record<string, object> = {
      a: { thing_key: 'a', user_defined_properties: { site: 'Pune' } },
      b: { thing_key: 'b', user_defined_properties: { site: 'Delhi' } },
    };
    const asked: string[] = [];
    const verdicts = evaluate(
      [inPune],
      events(event('a', { temperature: 90 }), event('b', { temperature: 90 }), event('gone', { temperature: 90 })),
      (key) => {
        asked.push(key);
        return things[key];
      },
    );
    assert.deepEqual(fired(verdicts.firings), [['pune', 0]]);
    assert.deepEqual(asked, ['a', 'b', 'gone']);
  });

  it('when a condition reads thing fields then they come from the thing and metrics from the event', () => {
    const r = rule({ rule_key: 'r', condition: "thing.user_defined_properties.site == 'Pune' and temperature > 80" });
    const things: Record<string, object> = {
      a: { user_defined_properties: { site: 'Pune' } },
      b: { user_defined_properties: { site: 'Delhi' } },
    };
    const verdicts = evaluate(
      [r],
      events(event('a', { temperature: 90 }), event('b', { temperature: 90 }), event('a', { temperature: 70 })),
      (key) => things[key],
    );
    assert.deepEqual(fired(verdicts.firings), [['r', 0]]);
  });

  it('when a condition no longer parses then the rule does not compile, and a broken group expression leaves the static members', () => {
    const row = {
      rule_key: 'x',
      organisation_key: 'org',
      name: 'x',
      description: '',
      thing_template_key: null,
      thing_keys: '[]',
      group_key: 'g',
      condition: 'temperature >',
      alert_type: 0,
      alert_message: '',
      trigger: 'every_event',
      enabled: 1,
      for_seconds: 0,
      auto_clear: 0,
      created_at: 0,
      updated_at: 0,
    };
    assert.equal(compileRule(row, undefined, []), undefined);
    const broken = compileRule(
      { ...row, condition: 'temperature > 1' },
      { thingExpression: 'tags ==', members: ['m'] },
      [],
    );
    assert.ok(broken);
    assert.equal(broken.inGroup, undefined);
    assert.equal(broken.needsThing, false);
    assert.deepEqual(
      fired(
        evaluate([broken], events(event('m', { temperature: 2 }), event('n', { temperature: 2 })), noThing).firings,
      ),
      [['x', 0]],
    );
  });
});

describe('rule evaluator: on_enter', () => {
  const onEnter = (key: string, condition = 'temperature > 80') =>
    rule({ rule_key: key, condition, trigger: 'on_enter' });

  it("when a thing's events are evaluated then its pair keeps the first verdict, the rises and the last verdict, pairs in key order", () => {
    const b = onEnter('b');
    const a = onEnter('a');
    const verdicts = evaluate(
      [b, a],
      events(
        event('t2', { temperature: 90 }),
        event('t1', { temperature: 50 }),
        event('t2', { temperature: 50 }),
        event('t2', { temperature: 95 }),
        event('t2', { temperature: 96 }),
        event('t2', { temperature: 10 }),
        event('t2', { temperature: 99 }),
      ),
      noThing,
    );
    assert.deepEqual(verdicts.firings, [], 'on_enter rules fire only once their states are known');
    const shape = (p: EnteringPair) => ({
      rule: p.rule.row.rule_key,
      thing: p.thingKey,
      first: p.first.order,
      firstMatched: p.firstMatched,
      rising: p.rising.map((c) => c.order),
      lastMatched: p.lastMatched,
    });
    const t1 = { thing: 't1', first: 1, firstMatched: false, rising: [], lastMatched: false };
    const t2 = { thing: 't2', first: 0, firstMatched: true, rising: [3, 6], lastMatched: true };
    assert.deepEqual(verdicts.entering.map(shape), [
      { rule: 'a', ...t1 },
      { rule: 'a', ...t2 },
      { rule: 'b', ...t1 },
      { rule: 'b', ...t2 },
    ]);
  });

  it('when the stored state is not true then the first match fires; when it is true only a later rise fires', () => {
    const r = onEnter('r');
    const candidates = events(
      event('t', { temperature: 90 }),
      event('t', { temperature: 10 }),
      event('t', { temperature: 90 }),
    );
    const { entering } = evaluate([r], candidates, noThing);
    for (const stored of [false, undefined]) {
      const result = enter(entering, [stored]);
      assert.deepEqual(fired(result.firings), [
        ['r', 0],
        ['r', 2],
      ]);
      assert.deepEqual(
        result.changes.map((c) => [c.rule.row.rule_key, c.thingKey, c.matched]),
        [['r', 't', true]],
      );
    }
    const held = enter(entering, [true]);
    assert.deepEqual(fired(held.firings), [['r', 2]]);
    assert.deepEqual(held.changes, [], 'the stored state is already the last verdict');
  });

  it('when the condition stops holding then nothing fires and the state becomes false', () => {
    const r = onEnter('r');
    const { entering } = evaluate([r], events(event('t', { temperature: 10 })), noThing);
    const result = enter(entering, [true]);
    assert.deepEqual(result.firings, []);
    assert.deepEqual(
      result.changes.map((c) => [c.thingKey, c.matched]),
      [['t', false]],
    );
    assert.deepEqual(enter(entering, [false]).changes, []);
  });

  it('when several pairs fire then their firings come in the order their events arrived', () => {
    const a = onEnter('a');
    const b = onEnter('b', 'humidity > 50');
    const candidates = events(
      event('t1', { humidity: 60 }),
      event('t2', { temperature: 90, humidity: 90 }),
      event('t1', { temperature: 90 }),
    );
    const { entering } = evaluate([a, b], candidates, noThing);
    const result = enter(
      entering,
      entering.map(() => false),
    );
    assert.deepEqual(fired(result.firings), [
      ['b', 0],
      ['a', 1],
      ['b', 1],
      ['a', 2],
    ]);
  });

  it('when every_event and on_enter rules share events then each kind keeps its own firings', () => {
    const every = rule({ rule_key: 'every' });
    const entering = onEnter('enter');
    const verdicts = evaluate(
      [every, entering],
      events(event('t', { temperature: 90 }), event('t', { temperature: 91 })),
      noThing,
    );
    assert.deepEqual(fired(verdicts.firings), [
      ['every', 0],
      ['every', 1],
    ]);
    assert.deepEqual(fired(enter(verdicts.entering, [false]).firings), [['enter', 0]]);
  });
});
