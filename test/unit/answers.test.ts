import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Type } from '@sinclair/typebox';
import { answerWriter } from '../../src/core/http/answers.ts';
import { RoleList } from '../../src/roles/schemas.ts';

const role = {
  role_key: 'r1',
  name: 'Operators "A"',
  abilities: [11, 21],
  account_admin: false,
  permissions: [{ class: 'thing', operation: 'read', seqno: 1 }],
  created_at: '2024/01/01 05:30:00',
  updated_at: 1704067200,
};

describe('answers written from response schemas', () => {
  it('when a list answer is written from its schema then it is the JSON of the answer, members left out or not', () => {
    const write = answerWriter('GET', '/api/v3/roles', RoleList, true);
    const full = { total_count: 1, page: '1', roles: [role] };
    assert.deepEqual(JSON.parse(write(full)), full);
    // field_list leaves members out: still written, still checked.
    const picked = { total_count: 1, page: 2, roles: [{ role_key: 'r1', name: 'x' }] };
    assert.deepEqual(JSON.parse(write(picked)), picked);
  });

  it('when an answer has a member its schema lacks then the check fails the answer, and the unchecked writer drops it', () => {
    const schema = Type.Object({ thing: Type.Object({ thing_key: Type.String() }) });
    const answer = { thing: { thing_key: 'k', name: 'undeclared' } };
    assert.equal(answerWriter('GET', '/x', schema, false)(answer), '{"thing":{"thing_key":"k"}}');
    assert.throws(() => answerWriter('GET', '/x', schema, true)(answer), /GET \/x: its response schema writes/);
  });

  it('when an answer member has another type than its schema says then the check fails the answer', () => {
    const schema = Type.Object({ count: Type.Integer() });
    assert.throws(() => answerWriter('GET', '/x', schema, true)({ count: 'seven' }), /outside its response schema/);
  });

  it('when a route has no response schema then answers are JSON.stringify', () => {
    assert.equal(answerWriter('GET', '/x', undefined, true)({ a: [1, { b: null }] }), '{"a":[1,{"b":null}]}');
  });
});
