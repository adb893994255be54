/**
 * Admission of event requests over HTTP (docs/devices.md, "Overload"). Checked when a request
 * arrives, before its body is read: while the event writer refuses work, or while the bodies of
 * event requests under way add up to more than a budget, the request is answered 503 with
 * Retry-After at once. Reading and parsing a 10 MiB bulk only to refuse it would cost the memory and
 * time the refusal is there to save. So is a device's request whose key pair's client (key pair and
 * address) or organisation holds its share of a busy writer (events/fair-share.ts): its key is known
 * from its X-Access-Key header before its body is read.
 */
import type { FastifyRequest } from 'fastify';
import { type ApiError, sendAgainLater } from '../core/errors.ts';
import { BodyBytes } from '../core/http/body-budget.ts';
import { type Admission, deviceKeyOf } from '../core/http/route.ts';
import type { Principal } from '../core/principal.ts';
import { STORE_BEHIND } from './writer.ts';

/** An HTTP client of a key pair, as fair shares of a busy writer tell sources apart (events/fair-share.ts). */
export const httpSource = (principal: Principal, request: FastifyRequest): string =>
  `http:${principal.accessKey ?? ''}@${request.ip}`;

/** Bytes of event request bodies that may be under way at once. */
export const EVENT_BODY_BUDGET = 64 * 1024 * 1024;

export class EventAdmission implements Admission {
  private readonly bodies: BodyBytes;
  private readonly admitted = new WeakMap<FastifyRequest, number>();

  constructor(
    /** Whether the writer refuses new work now. */
    private readonly writerRefusing: () => boolean,
    /** Counted for a body of unknown length (chunked): the route's body limit. */
    private readonly unknownLength: number,
    /** Why the writer would refuse a request of an organisation's source now (EventWriter.refusal). */
    private readonly sourceRefusal?: (organisationKey: string, source: string) => string | undefined,
    budget = EVENT_BODY_BUDGET,
  ) {
    this.bodies = new BodyBytes(budget);
  }

  enter(request: FastifyRequest): ApiError | undefined {
    if (this.writerRefusing()) return sendAgainLater(STORE_BEHIND);
    const device = deviceKeyOf(request);
    const refused = device && this.sourceRefusal?.(device.organisationKey, httpSource(device, request));
    if (refused) return sendAgainLater(refused);
    const size = this.bodies.take(request, this.unknownLength);
    if (size === undefined) return sendAgainLater('too many events are being received; send again shortly');
    this.admitted.set(request, size);
    return undefined;
  }

  leave(request: FastifyRequest): void {
    const size = this.admitted.get(request);
    if (size === undefined) return;
    this.admitted.delete(request);
    this.bodies.give(size);
  }
}
