import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { changedFields, valueText } from '../../console/src/audit/changes.ts';

describe("the console's audit trail changes", () => {
  it('when a field changes then it is listed with both values; fields alike are not', () => {
    assert.deepEqual(
      changedFields(
        { name: 'Mill', condition: 'temprature > 80', enabled: true, tags: ['a'] },
        { name: 'Mill', condition: 'temperature > 80', enabled: true, tags: ['a', 'b'] },
      ),
      [
        { field: 'condition', before: 'temprature > 80', after: 'temperature > 80' },
        { field: 'tags', before: '["a"]', after: '["a","b"]' },
      ],
    );
  });

  it('when a resource is created or deleted then its fields with values are listed on their side only', () => {
    assert.deepEqual(changedFields({}, { name: 'Pump', description: null, heartbeat: 60 }), [
      { field: 'name', before: undefined, after: 'Pump' },
      { field: 'heartbeat', before: undefined, after: '60' },
    ]);
    assert.deepEqual(changedFields({ name: 'Pump' }, {}), [{ field: 'name', before: 'Pump', after: undefined }]);
  });

  it('when a value is long then it is cut with an ellipsis', () => {
    const text = valueText('x'.repeat(1000));
    assert.equal(text.length, 300);
    assert.ok(text.endsWith('…'));
    assert.equal(valueText({ a: 1 }), '{"a":1}');
  });

  it('when a time field holds epoch seconds then the given formatter shows it; other numbers stay numbers', () => {
    const time = (seconds: number) => `at ${seconds}`;
    assert.deepEqual(changedFields({ updated_at: 1, heartbeat: 5 }, { updated_at: 2, heartbeat: 6 }, time), [
      { field: 'updated_at', before: 'at 1', after: 'at 2' },
      { field: 'heartbeat', before: '5', after: '6' },
    ]);
  });
});
