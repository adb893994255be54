import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FastifyRequest } from 'fastify';
import { EventAdmission } from '../../src/events/admission.ts';

const request = (contentLength?: number) =>
  ({ headers: contentLength === undefined ? {} : { 'content-length': String(contentLength) } }) as FastifyRequest;

describe('admission of event requests', () => {
  it('when the bodies under way would exceed the budget then the next request is refused until one leaves', () => {
    const admission = new EventAdmission(() => false, 1000, undefined, 1500);
    const first = request(1000);
    assert.equal(admission.enter(first), undefined);
    const refused = admission.enter(request(600));
    assert.equal(refused?.status, 503);
    assert.equal(refused?.headers['retry-after'], '1');
    assert.equal(admission.enter(request(400)), undefined, 'a smaller one still fits');
    admission.leave(first);
    admission.leave(first);
    assert.equal(admission.enter(request(600)), undefined, 'counted down once');
  });

  it('when a body has no length then it counts as the largest allowed, and one request is always let in', () => {
    const admission = new EventAdmission(() => false, 5000, undefined, 1500);
    assert.equal(admission.enter(request()), undefined, 'alone, even over the budget');
    assert.equal(admission.enter(request(10))?.status, 503);
  });

  it('when the writer refuses then every request is refused', () => {
    let refusing = true;
    const admission = new EventAdmission(() => refusing, 1000);
    assert.equal(admission.enter(request(10))?.errors[0]?.code, 'unavailable');
    refusing = false;
    assert.equal(admission.enter(request(10)), undefined);
  });
});
