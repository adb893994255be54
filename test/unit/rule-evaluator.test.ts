/**
 * The rule evaluator (src/rules/evaluator.ts) on its own: compiled rules and events in, firings and
 * `on_enter` states out, without a store (docs/rules.md, "How rules are evaluated").
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type Candidate,
  enter,
  evaluate,
  type Firing,
  FRESH_STATE,
  type RuleState,
  type StatefulPair,
} from '../../src/rules/evaluator.ts';
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
    assert.deepEqual(verdicts.pairs, []);
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
  const onEnter = (key: string, condition = 'temperature > 80', fields: Partial<RuleRow> = {}) =>
    rule({ rule_key: key, condition, trigger: 'on_enter', ...fields });
  const held: RuleState = { matched: true, runStartedAt: 0, fired: true, openAlert: false };
  const fires = (result: ReturnType<typeof enter>) =>
    result.effects.filter((e) => e.kind === 'fire').map((e) => [e.rule.row.rule_key, e.candidate.order]);
  const effects = (result: ReturnType<typeof enter>) => result.effects.map((e) => [e.kind, e.candidate.order]);

  it("when a thing's events are evaluated then its pair keeps its first event and every verdict from the first true one, in arrival order, pairs in key order", () => {
    const b = onEnter('b');
    const a = onEnter('a');
    const verdicts = evaluate(
      [b, a],
      events(
        event('t2', { temperature: 90 }),
        event('t1', { temperature: 50 }),
        event('t2', { temperature: 50 }),
        event('t2', { temperature: 95 }),
        event('t3', { temperature: 50 }),
        event('t3', { temperature: 40 }),
        event('t3', { temperature: 91 }),
      ),
      noThing,
    );
    assert.deepEqual(verdicts.firings, [], 'on_enter rules fire only once their states are known');
    const shape = (p: StatefulPair) => ({
      rule: p.rule.row.rule_key,
      thing: p.thingKey,
      first: p.first.order,
      held: p.held,
      orders: p.candidates.map((c) => c.order),
      verdicts: p.verdicts,
    });
    const t1 = { thing: 't1', first: 1, held: false, orders: [], verdicts: [] };
    const t2 = { thing: 't2', first: 0, held: true, orders: [0, 2, 3], verdicts: [true, false, true] };
    const t3 = { thing: 't3', first: 4, held: true, orders: [6], verdicts: [true] };
    assert.deepEqual(verdicts.pairs.map(shape), [
      { rule: 'a', ...t1 },
      { rule: 'a', ...t2 },
      { rule: 'a', ...t3 },
      { rule: 'b', ...t1 },
      { rule: 'b', ...t2 },
      { rule: 'b', ...t3 },
    ]);
    const open: RuleState = { matched: true, runStartedAt: 0, fired: true, openAlert: true };
    const entered = enter(verdicts.pairs, [FRESH_STATE, FRESH_STATE, open, FRESH_STATE, FRESH_STATE, FRESH_STATE]);
    assert.deepEqual(
      effects(entered),
      [
        ['fire', 0],
        ['fire', 0],
        ['fire', 3],
        ['fire', 3],
        ['clear', 4],
        ['fire', 6],
        ['fire', 6],
      ],
      'the events before the first true verdict end the run and clear the alert at the first of them',
    );
    assert.deepEqual(entered.states[0], FRESH_STATE, 'a state at rest stays so through failing verdicts');
    assert.deepEqual(entered.states[2], { ...open, runStartedAt: 1006, openAlert: false });
  });

  it('when the stored state is not true then the first match fires; when it is true only a later rise fires', () => {
    const r = onEnter('r');
    const candidates = events(
      event('t', { temperature: 90 }),
      event('t', { temperature: 10 }),
      event('t', { temperature: 90 }),
    );
    const { pairs } = evaluate([r], candidates, noThing);
    for (const stored of [FRESH_STATE, undefined]) {
      const result = enter(pairs, [stored]);
      assert.deepEqual(fires(result), [
        ['r', 0],
        ['r', 2],
      ]);
      assert.deepEqual(result.states, [{ matched: true, runStartedAt: 1002, fired: true, openAlert: false }]);
    }
    assert.deepEqual(fires(enter(pairs, [held])), [['r', 2]]);
  });

  it('when the condition stops holding then nothing fires and the run ends', () => {
    const r = onEnter('r');
    const { pairs } = evaluate([r], events(event('t', { temperature: 10 })), noThing);
    const result = enter(pairs, [held]);
    assert.deepEqual(result.effects, []);
    assert.deepEqual(result.states, [FRESH_STATE]);
  });

  it('when several pairs fire then their firings come in the order their events arrived', () => {
    const a = onEnter('a');
    const b = onEnter('b', 'humidity > 50');
    const candidates = events(
      event('t1', { humidity: 60 }),
      event('t2', { temperature: 90, humidity: 90 }),
      event('t1', { temperature: 90 }),
    );
    const { pairs } = evaluate([a, b], candidates, noThing);
    const result = enter(
      pairs,
      pairs.map(() => undefined),
    );
    assert.deepEqual(fires(result), [
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
    assert.deepEqual(fires(enter(verdicts.pairs, [undefined])), [['enter', 0]]);
  });

  it('when a rule has for_seconds then it fires at the first event of the run that far after its start, once per run', () => {
    const r = onEnter('r', 'temperature > 80', { for_seconds: 5 });
    const at = (timestamp: number, temperature: number, order: number): Candidate => ({
      event: { timestamp, data: { temperature } },
      thingKey: 't',
      templateKey: 'template',
      order,
    });
    const candidates = [
      at(0, 90, 0),
      at(4_999, 90, 1),
      at(5_000, 91, 2),
      at(9_000, 92, 3),
      at(10_000, 10, 4),
      at(11_000, 90, 5),
      at(15_000, 90, 6),
      at(16_000, 90, 7),
    ];
    const { pairs } = evaluate([r], candidates, noThing);
    const result = enter(pairs, [undefined]);
    assert.deepEqual(fires(result), [
      ['r', 2],
      ['r', 7],
    ]);
    assert.deepEqual(result.states, [{ matched: true, runStartedAt: 11_000, fired: true, openAlert: false }]);
    // Going on from a stored run that began earlier: the first event far enough after its start fires.
    const later = evaluate([r], [at(20_000, 95, 0)], noThing).pairs;
    const stored: RuleState = { matched: true, runStartedAt: 14_000, fired: false, openAlert: false };
    assert.deepEqual(fires(enter(later, [stored])), [['r', 0]]);
    assert.deepEqual(fires(enter(later, [{ ...stored, runStartedAt: 16_000 }])), []);
  });

  it('when a holding state has no run start then its run counts from the next event', () => {
    const r = onEnter('r', 'temperature > 80', { for_seconds: 5 });
    const candidates = [0, 4_000, 5_000].map((timestamp, order) => ({
      ...event('t', { temperature: 90 }),
      event: { timestamp: 1_000 + timestamp, data: { temperature: 90 } },
      order,
    }));
    const { pairs } = evaluate([r], candidates, noThing);
    const unknown: RuleState = { matched: true, runStartedAt: null, fired: false, openAlert: false };
    assert.deepEqual(fires(enter(pairs, [unknown])), [['r', 2]]);
  });

  it('when a rule has auto_clear then it raises nothing while it keeps an alert open and clears it when the condition fails', () => {
    const r = onEnter('r', 'temperature > 80', { auto_clear: 1 });
    const candidates = events(
      event('t', { temperature: 90 }),
      event('t', { temperature: 10 }),
      event('t', { temperature: 90 }),
    );
    const { pairs } = evaluate([r], candidates, noThing);
    assert.deepEqual(effects(enter(pairs, [undefined])), [
      ['fire', 0],
      ['clear', 1],
      ['fire', 2],
    ]);
    const open: RuleState = { ...FRESH_STATE, openAlert: true };
    const reset = enter(pairs, [open]);
    assert.deepEqual(
      effects(reset),
      [
        ['clear', 1],
        ['fire', 2],
      ],
      'an open alert (rule reset) is not raised again',
    );
    assert.equal(reset.states[0]?.openAlert, true);
  });

  it('when an every_event rule has auto_clear then it fires again only after its alert is cleared', () => {
    const r = rule({ rule_key: 'e', auto_clear: 1 });
    const candidates = events(
      event('t', { temperature: 90 }),
      event('t', { temperature: 91 }),
      event('t', { temperature: 10 }),
      event('t', { temperature: 92 }),
    );
    const verdicts = evaluate([r], candidates, noThing);
    assert.deepEqual(verdicts.firings, [], 'kept as state, not fired at once');
    assert.deepEqual(effects(enter(verdicts.pairs, [undefined])), [
      ['fire', 0],
      ['clear', 2],
      ['fire', 3],
    ]);
  });

  it('when a no_data rule sees events then its condition is not evaluated and its open alert clears at the first', () => {
    const r = rule({ rule_key: 'n', trigger: 'no_data', condition: '', for_seconds: 60, auto_clear: 1 });
    const candidates = events(event('t', { temperature: 1 }), event('t', { temperature: 2 }));
    const { pairs } = evaluate([r], candidates, noThing);
    assert.deepEqual([pairs[0]?.first.order, pairs[0]?.held, pairs[0]?.verdicts], [0, false, []]);
    assert.deepEqual(effects(enter(pairs, [{ ...FRESH_STATE, openAlert: true }])), [['clear', 0]]);
    assert.deepEqual(effects(enter(pairs, [undefined])), []);
  });
});
