/**
 * Example values made from schemas (src/openapi/example-values.ts), for the operations of the OpenAPI
 * document that have no example written by hand: each must be a value its schema accepts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { operationId } from '../../src/openapi/document.ts';
import { exampleObject, exampleValue } from '../../src/openapi/example-values.ts';

describe('example values from schemas', () => {
  it('when a schema names its value (default, examples, enum, const) then that value is the example', () => {
    assert.equal(exampleValue({ type: 'integer', default: 20 }), 20);
    assert.equal(exampleValue({ type: 'string', examples: ['Mumbai'] }), 'Mumbai');
    assert.equal(exampleValue({ type: 'string', enum: ['asc', 'desc'] }), 'asc');
    assert.equal(exampleValue({ const: 'rule' }), 'rule');
  });

  it('when a schema is a choice then the first choice that is not null is used', () => {
    assert.equal(exampleValue({ anyOf: [{ type: 'null' }, { type: 'integer', minimum: 3 }] }), 3);
    assert.equal(exampleValue({ oneOf: [{ type: 'null' }] }), null);
    assert.equal(exampleValue({ type: ['null', 'boolean'] }), false);
    assert.equal(exampleValue({ type: 'null' }), null);
  });

  it('when a member is named for a kind of value then the example is of that kind, if its type allows', () => {
    assert.equal(exampleValue({ type: 'string' }, 'email'), 'ops@example.com');
    assert.equal(exampleValue({}, 'time_zone'), 'UTC');
    assert.equal(exampleValue({ type: 'integer' }, 'name'), 1, 'an integer named name stays an integer');
    assert.equal(exampleValue({ type: 'string' }, 'thing_key'), 'k3y0example');
    assert.equal(exampleValue({ type: 'string', minLength: 12 }), 'examplexxxxx');
    assert.equal(exampleValue({ type: 'string' }), 'example');
  });

  it('when a schema is a number, an array or an object then bounds and required members are met', () => {
    assert.equal(exampleValue({ type: 'number' }), 1);
    assert.equal(exampleValue({ type: 'integer', minimum: 0 }), 0);
    assert.deepEqual(exampleValue({ type: 'array', items: { type: 'number' }, minItems: 2 }), [1, 1]);
    assert.deepEqual(exampleValue({ type: 'array', minItems: 0 }), ['example']);
    assert.deepEqual(
      exampleValue({
        type: 'object',
        required: ['name', 'abilities', 'missing'],
        properties: { name: { type: 'string' }, abilities: { type: 'array', items: { type: 'integer' } }, note: {} },
      }),
      { name: 'Boiler room', abilities: [1], missing: 'example' },
    );
    assert.deepEqual(exampleObject({ type: 'object' }), {});
  });
});

describe('operation ids', () => {
  it('when a path has parameters or another version then the id says so, in camel case', () => {
    assert.equal(operationId('GET', '/api/v3/things/{thing_key}'), 'getThingsByThingKey');
    assert.equal(operationId('post', '/api/v3/query/thing_data'), 'postQueryThingData');
    assert.equal(
      operationId('delete', '/api/v2/notification_actions/{notification_action_key}'),
      'deleteApiV2NotificationActionsByNotificationActionKey',
    );
    assert.equal(operationId('post', '/api_sign_in'), 'postApiSignIn');
  });
});
