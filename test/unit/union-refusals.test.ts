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

  it('when the value is of one form’s type but fails at the field itself then that form’s error is told', () => {
    assert.deepEqual(refusal('x'.repeat(11)), [
      { code: 'invalid', param: 'gateway.tags', message: 'must NOT have more than 10 characters' },
    ]);
    assert.deepEqual(refusal(['a', 'b', 'c']), [
      { code: 'invalid', param: 'gateway.tags', message: 'must NOT have more than 2 items' },
    ]);
  });

  it('when the value has the shape of neither form then the field is told it is of the wrong type', () => {
    assert.deepEqual(refusal({ a: 1 }), [
      { code: 'invalid', param: 'gateway.tags', message: 'has a value of the wrong type or outside its allowed set' },
    ]);
  });

  it('when the value has the shape of both forms then the field is told it is of the wrong type', () => {
    const either = compileParams(
      Type.Object({
        range: Type.Union([
          Type.Object({ last: Type.String({ pattern: '^[0-9]+m$' }) }),
          Type.Object({ last: Type.String({ maxLength: 2 }) }),
        ]),
      }),
    );
    assert.throws(
      () => either({ range: { last: 'abc' } }),
      (error: unknown) =>
        error instanceof ApiError &&
        error.errors.length === 1 &&
        error.errors[0]?.param === 'range' &&
        error.errors[0]?.message === 'has a value of the wrong type or outside its allowed set',
    );
  });

  it('when the field of two forms is in every item of a list then each item is told its own error', () => {
    const list = compileParams(
      Type.Object({
        list: Type.Array(
          Type.Object({
            tags: Type.Union([Type.String({ maxLength: 10 }), Type.Array(Type.String({ maxLength: 3 }))]),
          }),
        ),
      }),
    );
    assert.throws(
      () => list({ list: [{ tags: ['abcd'] }, { tags: ['efgh'] }] }),
      (error: unknown) => {
        assert.ok(error instanceof ApiError);
        assert.deepEqual(error.errors, [
          { code: 'invalid', param: 'list.0.tags.0', message: 'must NOT have more than 3 characters' },
          { code: 'invalid', param: 'list.1.tags.0', message: 'must NOT have more than 3 characters' },
        ]);
        return true;
      },
    );
  });
});
