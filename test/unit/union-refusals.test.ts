import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Type } from '@sinclair/typebox';
import { ApiError, type ErrorItem } from '../../src/core/errors.ts';
import { compileParams } from '../../src/core/http/validation.ts';

/** A field of two forms, as a gateway's `tags`: comma-joined text, or an array of short texts. */
const validate = compileParams(
  Type.Object({
    gateway: Type.Object({
      tags: Type.Union([Type.String({ maxLength: 10 }), Type.Array(Type.String({ maxLength: 3 }), { maxItems: 2 })]),
    }),
  }),
);

function refusal(tags: unknown): ErrorItem[] {
  try {
    validate({ gateway: { tags } });
  } catch (error) {
    assert.ok(error instanceof ApiError);
    return error.errors;
  }
  assert.fail(`${JSON.stringify(tags)} was accepted`);
}

describe('refusals of a field of two forms (docs/api.md, "Errors")', () => {
  it('when the value has the shape of one form then that form’s error is told, inside the value', () => {
    assert.deepEqual(refusal(['abcd']), [
      { code: 'invalid', param: 'gateway.tags.0', message: 'must NOT have more than 3 characters' },
    ]);
  });

  it('when the value has the shape of neither form, or of both, then the field is told it is of the wrong type', () => {
    const wrongType = [
      { code: 'invalid', param: 'gateway.tags', message: 'has a value of the wrong type or outside its allowed set' },
    ];
    assert.deepEqual(refusal({ a: 1 }), wrongType);
    assert.deepEqual(refusal('x'.repeat(11)), wrongType, 'text too long fails at the field itself');
    assert.deepEqual(refusal(['a', 'b', 'c']), wrongType, 'too many items fails at the field itself');
  });
});
