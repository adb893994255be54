import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ALL_ABILITY, abilityOf, grants, permissionOf } from '../../src/core/permissions.ts';

describe('permissions', () => {
  it('when an ability is decoded then class and operation follow class*10+seqno', () => {
    assert.deepEqual(permissionOf(11), { class: 'thing', operation: 'read', seqno: 1 });
    assert.deepEqual(permissionOf(35), { class: 'rule', operation: 'all', seqno: 5 });
    assert.deepEqual(permissionOf(995), { class: 'all', operation: 'all', seqno: 5 });
    assert.equal(permissionOf(16), undefined);
    assert.deepEqual(permissionOf(141), { class: 'api_key', operation: 'read', seqno: 1 });
    assert.deepEqual(permissionOf(151), { class: 'dashboard', operation: 'read', seqno: 1 });
    assert.equal(permissionOf(161), undefined);
    assert.equal(permissionOf(7), undefined);
  });

  it('when a role holds an all ability then it grants every operation it covers', () => {
    assert.ok(grants(new Set([ALL_ABILITY]), 'gateway', 'delete'));
    assert.ok(grants(new Set([abilityOf('rule', 'all')]), 'rule', 'update'));
    assert.ok(grants(new Set([abilityOf('all', 'read')]), 'role', 'read'));
    assert.ok(!grants(new Set([abilityOf('all', 'read')]), 'role', 'create'));
    assert.ok(!grants(new Set([abilityOf('thing', 'read')]), 'role', 'read'));
  });
});
