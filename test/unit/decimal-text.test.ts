import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Type } from '@sinclair/typebox';
import { readDecimal } from '../../src/core/decimal.ts';
import { ApiError } from '../../src/core/errors.ts';
import { Nullable } from '../../src/core/http/schema.ts';
import { compileParams } from '../../src/core/http/validation.ts';

const NOT_DECIMAL = [
  '0x10',
  '0X10',
  '0b1',
  '0o7',
  ' 12',
  '12 ',
  '\t1',
  'Infinity',
  '-Infinity',
  'NaN',
  '',
  '1_000',
  '+-1',
  '1e',
  '.',
  '-',
  '1.',
  '1,5',
];

describe('decimal text', () => {
  it('when text is decimal then it is the number it writes, and any other notation is no number', () => {
    const read: [string, number][] = [
      ['12', 12],
      ['-12.5', -12.5],
      ['1e3', 1000],
      ['1E-2', 0.01],
      ['0002', 2],
      ['-0', -0],
    ];
    for (const [text, number] of read) assert.equal(readDecimal(text), number, text);
    for (const text of NOT_DECIMAL) assert.equal(readDecimal(text), undefined, JSON.stringify(text));
    assert.equal(readDecimal('1e999'), Number.POSITIVE_INFINITY, 'decimal, beyond a double: bounds refuse it');
  });

  it('when parameters declare numbers then text is read as decimal at any depth, before const, enum and bounds', () => {
    const validate = compileParams(
      Type.Object({
        level: Type.Optional(Type.Union([Type.Literal(1), Type.Literal(2)])),
        ratio: Type.Optional(Type.Number({ enum: [1.5, 3] })),
        types: Type.Optional(Type.Array(Type.Integer({ maximum: 3 }))),
        days: Type.Optional(Nullable(Type.Integer({ minimum: 1 }))),
        limit: Type.Optional(Type.Union([Type.Integer(), Type.Null()])),
        nested: Type.Optional(Type.Object({ per: Type.Integer() })),
        key: Type.Optional(Type.String()),
        when: Type.Optional(Type.Union([Type.Integer(), Type.String()])),
      }),
    );
    assert.deepEqual(validate({ level: '2', ratio: '1.5', types: ['1', '3e0'], days: '30', nested: { per: '1e2' } }), {
      level: 2,
      ratio: 1.5,
      types: [1, 3],
      days: 30,
      nested: { per: 100 },
    });
    assert.deepEqual(validate({ key: '0x10', when: '0x10', days: null, limit: '-3' }), {
      key: '0x10',
      when: '0x10',
      days: null,
      limit: -3,
    });
    const refusal = (input: Record<string, unknown>) => {
      try {
        validate(input);
      } catch (error) {
        assert.ok(error instanceof ApiError);
        return error.errors[0];
      }
      assert.fail(`accepted ${JSON.stringify(input)}`);
    };
    for (const text of NOT_DECIMAL) {
      for (const [input, param] of [
        [{ level: text }, 'level'],
        [{ types: ['1', text] }, 'types.1'],
        [{ days: text }, 'days'],
        [{ limit: text }, 'limit'],
        [{ nested: { per: text } }, 'nested.per'],
      ] as const) {
        assert.equal(refusal(input)?.param, param, `${JSON.stringify(input)}`);
      }
    }
    assert.match(String(refusal({ days: '0x10' })?.message), /decimal/);
    assert.equal(refusal({ days: '1.5' })?.param, 'days', 'a fraction where a whole number is declared');
    assert.equal(refusal({ types: ['4'] })?.param, 'types.0', 'bounds apply to the number read');
    assert.equal(refusal({ days: '1e999' })?.param, 'days');
  });
});
