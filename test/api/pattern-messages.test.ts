/**
 * A value of the wrong form is told the form in words (docs/api.md, "Errors"), not the regular
 * expression it failed: a thing key, an e-mail address, the text of a coordinate.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { createRole, defaultTemplateKey, unique } from '../support/fixtures.ts';
import { describeOnStores } from '../support/suites.ts';

describeOnStores('refusals of a value of the wrong form', (ctx) => {
  const itemOf = (answer: { status: number; text: string; body: any }, param: string) => {
    assert.equal(answer.status, 400, answer.text);
    return answer.body.errors.find((e: { param: string }) => e.param === param);
  };

  /** Creates a thing of the Default template with `fields`, as the admin. */
  const createThing = async (fields: object) => {
    const token = await ctx.api.adminToken();
    return ctx.api.request('POST', '/api/v3/things', {
      token,
      body: { thing: { name: 'Boiler', thing_template_key: await defaultTemplateKey(ctx.api, token), ...fields } },
    });
  };

  it('when a thing key holds other characters then it is told which characters a key takes', async () => {
    const made = await createThing({ thing_key: 'not a key!' });
    assert.deepEqual(itemOf(made, 'thing.thing_key'), {
      code: 'invalid',
      param: 'thing.thing_key',
      message: 'must be 1-64 characters of A-Za-z0-9._-',
    });
    assert.doesNotMatch(made.text, /pattern/);
  });

  it('when a coordinate is text that is not a number then it is told so', async () => {
    const made = await createThing({ coordinates: ['north', 3] });
    assert.equal(itemOf(made, 'thing.coordinates.0')?.message, 'must be a number (12.5, -3)');
  });

  it('when a user e-mail address has no @ then it is told what an address looks like', async () => {
    const token = await ctx.api.adminToken();
    const role = await createRole(ctx.api, token, [11]);
    const made = await ctx.api.request('POST', '/api/v3/users', {
      token,
      body: { user: { email: unique('nobody'), password: 'password one', role_key: role.role_key, name: 'Ann' } },
    });
    assert.equal(itemOf(made, 'user.email')?.message, 'must be an e-mail address, such as ops@example.com');
  });
});
