/**
 * How an endpoint is declared and served. Each route states, in one place, its path, who may call
 * it (the permission it needs), the schema of its parameters and what it answers; the wrapper here
 * authenticates, checks the permission, merges and validates parameters, and writes the JSON answer.
 */
import { Readable } from 'node:stream';
import type { Static, TObject, TSchema } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ChangeFeed, EntityType } from '../change-feed.ts';
import { ApiError, forbidden, invalidParam, ONLY_ACCOUNT_ADMINS, unauthorized, unknownReference } from '../errors.ts';
import { grants, type Operation, type PermissionClass } from '../permissions.ts';
import type { Principal } from '../principal.ts';
import { resolveTimeZone, type TimeFormatter, type TimestampFormat, timeFormatter } from '../time.ts';
import { AnswerCache, ChangeGenerations } from './answer-cache.ts';
import { answerWriter } from './answers.ts';
import {
  DEFAULT_BODY_LIMIT,
  declaresBody,
  ignoreContentTypeWithoutBody,
  isCsv,
  jsonBodyParams,
  PUBLIC_BODY_LIMIT,
  rawBody,
} from './body.ts';
import { closeWithAnswer, requestTimedOut } from './error-handler.ts';
import { JsonText } from './json-text.ts';
import { compileParams, documentedBounds } from './validation.ts';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Who may call the route (its Access kind), for app-wide hooks. */
    access?: Access['kind'];
  }
}

/** Who may call a route. */
export type Access =
  /** Anyone, no token (sign-in, health). */
  | { kind: 'public' }
  /** Any signed-in user (sign-out). */
  | { kind: 'signed_in' }
  /** A signed-in user whose role grants this permission (docs/api.md, "Permissions"). */
  | { kind: 'permission'; class: PermissionClass; operation: Operation }
  /**
   * The account admin of any organisation (its own organisation's settings; the handler checks what
   * else, such as an OEM organisation's children): refused before the request's input is checked.
   */
  | { kind: 'account_admin' }
  /** The account admin of an OEM organisation (managing child organisations). */
  | { kind: 'oem_admin' }
  /** A device signing its request with a key pair (docs/devices.md, "HTTP"); the handler checks what it may do. */
  | { kind: 'device' };

export const permission = (cls: PermissionClass, operation: Operation): Access => ({
  kind: 'permission',
  class: cls,
  operation,
});

export interface RouteCall<P> {
  params: P;
  /** The caller; for public routes a principal with no abilities. */
  principal: Principal;
  /** Presents epoch milliseconds per timestamp_format and time_zone. */
  time: TimeFormatter;
  /** `page` as it is echoed in list answers: a JSON string stays a string. */
  pageEcho: number | string;
  request: FastifyRequest;
  reply: FastifyReply;
  /** Organisations a read may see: the caller's, plus its children with is_oem=true. */
  visibleOrganisations(): Promise<string[]>;
  /** Organisation a create puts its resource in: the caller's, or `child_organisation_key`. */
  targetOrganisation(): Promise<string>;
}

export interface RouteSpec<S extends TObject = TObject> {
  method: HttpMethod;
  url: string;
  /** Further paths serving the same endpoint. */
  aliases?: string[];
  tags: string[];
  summary: string;
  description?: string;
  access: Access;
  /** Every parameter, wherever it comes from (query, body or path). */
  params: S;
  response?: TSchema;
  bodyLimit?: number;
  /**
   * The body may also be `text/csv`: then it is not read as parameters (only the query string is),
   * and the handler reads it with `csvBody`.
   */
  acceptsCsv?: boolean;
  /** Refuses requests before their body is read (event ingestion under overload). */
  admission?: Admission;
  /**
   * Not counted against the organisation's rate limit (docs/api.md, "Rate limits and usage"): taking
   * access away (a sign-out, an API key's deletion) must work even while a leaked token spends it.
   */
  unlimited?: boolean;
  /**
   * Serves the answer again from memory until a change of this entity type is told in one of the
   * visible organisations (answer-cache.ts). Only for reads whose answer depends on nothing but the
   * parameters, the visible organisations and the caller's time zone, and whose entities change only
   * through changes noted to the change feed.
   */
  cachedUntilChangeOf?: EntityType;
  /**
   * How an error names an item of an array: `widgets.0.title` (the API's way) or, for the dashboards,
   * whose widgets are named so in docs/api.md, `widgets[0].title`.
   */
  arrayIndexes?: 'dots' | 'brackets';
  handler(call: RouteCall<Static<S>>): Promise<unknown> | unknown;
}

/**
 * Decides, when a request arrives and before its body is read, whether it is taken on; `leave` is
 * called once its answer is sent (or its connection gone) for every request `enter` admitted.
 */
export interface Admission {
  enter(request: FastifyRequest): ApiError | undefined;
  leave(request: FastifyRequest): void;
}

/** What routes need from the rest of the server, provided when the app is built. */
export interface RouteServices {
  authenticate(request: FastifyRequest): Promise<Principal | undefined>;
  /**
   * Counts a signed-in user's request against the organisation's rate limit: answers the headers to
   * send, or throws its 429.
   */
  limitRequest(principal: Principal): Promise<Record<string, string>>;
  /** Checks a device's key pair signature over the body; answers the body the signature covers. */
  authenticateDevice(request: FastifyRequest): Promise<{ principal: Principal; body: Buffer | undefined }>;
  /** Checks a device request's key before its body is read: answers its principal, or throws its 401. */
  checkDeviceKey(request: FastifyRequest): Promise<Principal>;
  childOrganisations(organisationKey: string): Promise<string[]>;
  /** Changes to entities once they commit, for the answers kept in memory. */
  changes: ChangeFeed;
  /** Checks every answer against its route's response schema (see answers.ts). */
  checkAnswers: boolean;
  /** How long the body of a request anyone may send (a sign-in) has to arrive, ms (CONNECT_TIMEOUT). */
  publicBodyTimeoutMs: number;
}

/** A route of any parameter schema, as the registry holds them. */
export type AnyRoute = RouteSpec<TObject>;

/** Declares a route; the handler's `params` are typed by the route's schema. */
/** The OpenAPI extension that marks an operation not counted against the rate limit (`unlimited`). */
export const RATE_LIMIT_EXEMPT = 'x-rate-limit-exempt';

export const defineRoute = <S extends TObject>(spec: RouteSpec<S>): AnyRoute => spec as unknown as AnyRoute;

/** What `is_oem` may be as sent (read as a boolean where an endpoint declares it, as Ajv reads one). */
const OEM_VALUES = new Set<unknown>([undefined, null, true, false, 'true', 'false', '', 1, 0]);

const ANONYMOUS: Principal = {
  kind: 'user',
  userKey: null,
  userName: 'anonymous',
  email: null,
  roleKey: '',
  roleName: '',
  accountAdmin: false,
  abilities: new Set(),
  organisationKey: '',
  organisationIsOem: false,
  timeZone: 'Etc/UTC',
};

export interface CommonParamValues {
  pretty?: boolean;
  timestamp_format?: TimestampFormat;
  time_format?: TimestampFormat;
  time_zone?: string;
  is_oem?: boolean;
  child_organisation_key?: string;
  page?: unknown;
}

export function registerRoutes(app: FastifyInstance, services: RouteServices, specs: AnyRoute[]): void {
  for (const spec of specs) registerRoute(app, services, spec);
}

function registerRoute(app: FastifyInstance, services: RouteServices, spec: AnyRoute): void {
  const validate = compileParams(spec.params, spec.arrayIndexes);
  const write = answerWriter(spec.method, spec.url, spec.response, services.checkAnswers);
  const pathNames = [...spec.url.matchAll(/:([A-Za-z_]+)/g)].map((m) => m[1] as string);
  const cached =
    spec.cachedUntilChangeOf === undefined
      ? undefined
      : { generations: new ChangeGenerations(services.changes, spec.cachedUntilChangeOf), answers: new AnswerCache() };
  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    const { principal, body: bytes } = await authorise(services, spec, request, reply);
    const body = spec.acceptsCsv && isCsv(request) ? undefined : jsonBodyParams(bytes);
    const raw: Record<string, unknown> = {
      ...(request.query as Record<string, unknown>),
      ...body,
      ...(request.params as Record<string, unknown>),
    };
    const params = validate(raw) as CommonParamValues;
    // is_oem from a non-OEM organisation is a 403 wherever it is given, not only where it means something;
    // where the endpoint does not declare it, it is still refused when it is no boolean.
    const oem = params.is_oem ?? raw.is_oem;
    const signedIn = spec.access.kind !== 'public' && spec.access.kind !== 'device';
    if (signedIn && !OEM_VALUES.has(oem)) throw invalidParam('is_oem', 'must be boolean');
    if ((oem === true || oem === 'true') && signedIn && !principal.organisationIsOem) {
      throw forbidden('is_oem is only for OEM organisations');
    }
    const time = requestTimeFormatter(params, principal);
    let organisations: Promise<string[]> | undefined;
    const call: RouteCall<Record<string, unknown>> = {
      params: params as Record<string, unknown>,
      principal,
      time,
      pageEcho: typeof body?.page === 'string' ? body.page : ((params.page as number | undefined) ?? 1),
      request,
      reply,
      visibleOrganisations: () => {
        organisations ??= visibleOrganisations(services, principal, params);
        return organisations;
      },
      targetOrganisation: () => targetOrganisation(services, principal, params),
    };
    // Served from memory while the generation, taken before the data is read, is the one the answer was
    // kept under.
    let keep: { key: string; revision: string; answers: AnswerCache } | undefined;
    if (cached !== undefined) {
      const visible = await call.visibleOrganisations();
      const key = JSON.stringify([visible, principal.timeZone, call.pageEcho, params]);
      const generation = cached.generations.of(visible);
      const revision = typeof generation === 'string' ? generation : await generation;
      const answer = cached.answers.get(key, revision);
      if (answer !== undefined) return sendJson(reply, answer);
      keep = { key, revision, answers: cached.answers };
    }
    const result = await spec.handler(call);
    if (reply.sent) return reply;
    // A streamed answer (an export): piped to the socket, which paces it and ends it if the client leaves.
    // Its status and headers are sent as the stream starts, not with its first bytes, which may come
    // only after a long read (a CSV export's first pass).
    if (result instanceof Readable) {
      result.once('resume', () => reply.raw.flushHeaders());
      return reply.send(result);
    }
    let text: string;
    if (result instanceof JsonText) {
      text = params.pretty ? JSON.stringify(JSON.parse(result.text), null, 2) : result.text;
    } else {
      text = params.pretty ? JSON.stringify(result, null, 2) : write(result);
    }
    if (keep === undefined) return sendJson(reply, text);
    const answer = Buffer.from(text);
    keep.answers.set(keep.key, keep.revision, answer);
    return sendJson(reply, answer);
  };
  const schema = documentationSchema(spec, pathNames);
  const hooks = routeHooks(services, spec);
  for (const url of [spec.url, ...(spec.aliases ?? [])]) {
    app.route({
      method: spec.method,
      url,
      handler,
      schema: url === spec.url ? schema : { ...schema, hide: true },
      bodyLimit: spec.bodyLimit ?? (spec.access.kind === 'public' ? PUBLIC_BODY_LIMIT : DEFAULT_BODY_LIMIT),
      // Bodies of routes without an admission of their own share one budget (body-budget.ts).
      // `access` tells app-wide hooks whose request it is (a device's requests wait less for the store).
      config: { ownAdmission: spec.admission !== undefined, access: spec.access.kind },
      ...hooks,
      exposeHeadRoute: false,
    });
  }
}

/** Users signed in by a route's hook, before their request's body was read. */
const signedIn = new WeakMap<FastifyRequest, Principal>();
/** The principal of a device request's key, checked before its body is read (not its signature yet). */
const deviceKeys = new WeakMap<FastifyRequest, Principal>();

/**
 * The key pair's principal of a device request with a body, known before the body is read: for an
 * admission to decide by organisation and client. Its signature is checked later, with the body.
 */
export const deviceKeyOf = (request: FastifyRequest): Principal | undefined => deviceKeys.get(request);

/** What of a route's access is checked before a body is read: a device's key, a user's token. */
function checkBeforeBody(
  services: RouteServices,
  access: Access,
): ((request: FastifyRequest) => Promise<unknown>) | undefined {
  if (access.kind === 'public') return undefined;
  if (access.kind === 'device') {
    return async (request) => {
      deviceKeys.set(request, await services.checkDeviceKey(request));
    };
  }
  return async (request) => {
    const principal = await services.authenticate(request);
    if (!principal) throw unauthorized();
    signedIn.set(request, principal);
  };
}

/**
 * The body of a request anyone may send (a sign-in, a form's worth of bytes) must arrive within `ms` of
 * its headers, or the request is answered 408 and its connection closed, as past REQUEST_TIMEOUT: no
 * one can hold the bodies' budget (body-budget.ts) for minutes without signing in.
 */
function bodyDeadline(ms: number) {
  return (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
    if (!declaresBody(request)) return done();
    const socket = request.raw.socket;
    // On a connection that answered earlier requests too: this request has no answer yet. The check
    // waits for the sockets to be read once more: after the server was held up for longer than `ms`
    // (a pause of the collector, a slow disk), the timer runs before a body already arrived is read.
    const late = () => {
      if (!request.raw.complete) closeWithAnswer(socket, reply.raw.headersSent ? undefined : requestTimedOut());
    };
    const timer = setTimeout(() => setImmediate(late), ms);
    // Until the body is read: the answer's end, or the connection's, comes after it.
    request.raw.once('end', () => clearTimeout(timer));
    reply.raw.once('close', () => clearTimeout(timer));
    done();
  };
}

/**
 * Hooks run before a route's body is read. A user's token, or a device's key, is checked there when
 * the request has a body (without one, the handler checks it): a request without a valid token or key
 * is answered 401 without its body being read, so it holds no part of the bodies' budgets
 * (body-budget.ts, the route's admission) for longer than that. With an admission, it is asked next,
 * and told when the request is done.
 */
function routeHooks(services: RouteServices, spec: AnyRoute) {
  type Hook = (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void) => void;
  const onRequest: Hook[] = [ignoreContentTypeWithoutBody];
  if (spec.access.kind === 'public') onRequest.push(bodyDeadline(services.publicBodyTimeoutMs));
  const check = checkBeforeBody(services, spec.access);
  if (check) {
    onRequest.push((request, _reply, done) => {
      if (!declaresBody(request)) return done();
      check(request).then(
        () => done(),
        (error: Error) => done(error),
      );
    });
  }
  const admission = spec.admission;
  if (!admission) return { onRequest };
  const leave = (request: FastifyRequest, done: () => void) => {
    admission.leave(request);
    done();
  };
  onRequest.push((request, _reply, done) => done(admission.enter(request)));
  return {
    onRequest,
    onResponse: (request: FastifyRequest, _reply: FastifyReply, done: () => void) => leave(request, done),
    onRequestAbort: leave,
  };
}

function sendJson(reply: FastifyReply, answer: string | Buffer): FastifyReply {
  reply.header('content-type', 'application/json; charset=utf-8');
  return reply.send(answer);
}

async function authorise(
  services: RouteServices,
  { access, unlimited }: AnyRoute,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<{ principal: Principal; body: Buffer | undefined }> {
  if (access.kind === 'device') return services.authenticateDevice(request);
  const body = rawBody(request);
  if (access.kind === 'public') return { principal: ANONYMOUS, body };
  const principal = signedIn.get(request) ?? (await services.authenticate(request));
  if (!principal) throw unauthorized();
  if (!unlimited) reply.headers(await services.limitRequest(principal));
  if (access.kind === 'permission' && !grants(principal.abilities, access.class, access.operation)) {
    throw forbidden(`your role lacks the permission to ${access.operation} ${access.class}`);
  }
  if (access.kind === 'account_admin' && !principal.accountAdmin) throw forbidden(ONLY_ACCOUNT_ADMINS);
  if (access.kind === 'oem_admin' && !(principal.accountAdmin && principal.organisationIsOem)) {
    throw forbidden('only the account admin of an OEM organisation may do this');
  }
  return { principal, body };
}

export function requestTimeFormatter(params: CommonParamValues, principal: Principal): TimeFormatter {
  let zone = principal.timeZone;
  if (params.time_zone !== undefined) {
    const resolved = resolveTimeZone(params.time_zone);
    if (!resolved) throw invalidParam('time_zone', `is not a known time zone (${params.time_zone})`);
    zone = resolved;
  }
  return timeFormatter(params.timestamp_format ?? params.time_format ?? 'int', zone);
}

async function visibleOrganisations(
  services: RouteServices,
  principal: Principal,
  params: CommonParamValues,
): Promise<string[]> {
  if (!params.is_oem) return [principal.organisationKey];
  if (!principal.organisationIsOem) throw forbidden('is_oem is only for OEM organisations');
  return [principal.organisationKey, ...(await services.childOrganisations(principal.organisationKey))];
}

async function targetOrganisation(
  services: RouteServices,
  principal: Principal,
  params: CommonParamValues,
): Promise<string> {
  const child = params.child_organisation_key;
  if (child === undefined) {
    if (params.is_oem && !principal.organisationIsOem) throw forbidden('is_oem is only for OEM organisations');
    return principal.organisationKey;
  }
  if (!principal.organisationIsOem) throw forbidden('child_organisation_key is only for OEM organisations');
  const children = await services.childOrganisations(principal.organisationKey);
  if (!children.includes(child)) throw unknownReference('child_organisation_key', child);
  return child;
}

/** The route's schema as the OpenAPI generator reads it; validation itself happens in the handler. */
function documentationSchema(spec: AnyRoute, pathNames: string[]): Record<string, unknown> {
  const properties = (spec.params.properties ?? {}) as Record<string, TSchema>;
  const required = new Set<string>((spec.params.required as string[] | undefined) ?? []);
  const pick = (names: string[]) => ({
    type: 'object',
    properties: Object.fromEntries(names.map((n) => [n, documentedBounds(properties[n])])),
    required: names.filter((n) => required.has(n)),
  });
  const otherNames = Object.keys(properties).filter((n) => !pathNames.includes(n));
  const schema: Record<string, unknown> = {
    tags: spec.tags,
    summary: spec.summary,
    ...(spec.description ? { description: spec.description } : {}),
    ...(spec.access.kind === 'public'
      ? {}
      : { security: spec.access.kind === 'device' ? [{ accessKey: [], signature: [] }] : [{ authToken: [] }] }),
    // Read by the OpenAPI document (openapi/document.ts): such an operation is never a 429.
    ...(spec.unlimited ? { [RATE_LIMIT_EXEMPT]: true } : {}),
  };
  if (pathNames.length > 0) schema.params = pick(pathNames);
  if (otherNames.length > 0) {
    if (spec.method === 'GET' || spec.method === 'DELETE') schema.querystring = pick(otherNames);
    else schema.body = pick(otherNames);
  }
  if (spec.response) schema.response = { 200: spec.response };
  return schema;
}

export { ApiError };
