/**
 * The one registry of error codes and the one error type every layer throws.
 * The HTTP layer turns an ApiError into the error body of docs/api.md, "Errors":
 * {"success": false, "message": "...", "errors": [{"code", "param"?, "message"}]}.
 */
export type ErrorCode =
  | 'required'
  | 'invalid'
  | 'unknown_field'
  | 'not_found'
  | 'unauthorized'
  | 'forbidden'
  | 'conflict'
  | 'too_large'
  | 'timeout'
  | 'unsupported_media_type'
  | 'rate_limited'
  | 'unavailable'
  | 'not_implemented'
  | 'internal';

export interface ErrorItem {
  code: ErrorCode;
  message: string;
  param?: string;
}

export interface ErrorBody {
  success: false;
  message: string;
  errors: ErrorItem[];
}

export class ApiError extends Error {
  readonly status: number;
  readonly errors: ErrorItem[];
  readonly headers: Record<string, string>;

  constructor(status: number, errors: ErrorItem[], message?: string, headers: Record<string, string> = {}) {
    super(message ?? describeErrors(errors));
    this.name = 'ApiError';
    this.status = status;
    this.errors = errors;
    this.headers = headers;
  }

  toBody(): ErrorBody {
    return { success: false, message: this.message, errors: this.errors };
  }
}

function describeErrors(errors: ErrorItem[]): string {
  return errors.map((e) => (e.param ? `${e.param} ${e.message}` : e.message)).join('; ');
}

export const requiredParam = (param: string): ApiError =>
  new ApiError(400, [{ code: 'required', param, message: 'is required' }]);

export const invalidParam = (param: string, message: string): ApiError =>
  new ApiError(400, [{ code: 'invalid', param, message }]);

/** A key in a create/update body that names nothing the caller can see (400, docs/api.md, "Errors"). */
export const unknownReference = (param: string, key: string): ApiError =>
  new ApiError(400, [{ code: 'not_found', param, message: `names no known resource (${key})` }]);

/** An unknown key in the path, or the parent named by a query (404). Never says whose it is. */
export const notFound = (what: string, param?: string): ApiError =>
  new ApiError(
    404,
    [{ code: 'not_found', message: `${what} not found`, ...(param ? { param } : {}) }],
    `${what} not found`,
  );

export const unauthorized = (message = 'a valid X-Auth-Token is required'): ApiError =>
  new ApiError(401, [{ code: 'unauthorized', message }], message);

export const forbidden = (message = 'your role lacks the permission for this request'): ApiError =>
  new ApiError(403, [{ code: 'forbidden', message }], message);

export const conflict = (param: string, message: string): ApiError =>
  new ApiError(409, [{ code: 'conflict', param, message }]);

export const rateLimited = (retryAfterSeconds: number, message = 'too many requests'): ApiError =>
  new ApiError(429, [{ code: 'rate_limited', message }], message, {
    'retry-after': String(Math.max(1, Math.ceil(retryAfterSeconds))),
  });

/** 503: the server cannot take this now; the client sends it again after a second. */
export const sendAgainLater = (message: string): ApiError =>
  new ApiError(503, [{ code: 'unavailable', message }], undefined, { 'retry-after': '1' });

/** Why a caller who is not an account admin is refused what only one may do. */
export const ONLY_ACCOUNT_ADMINS = 'only an account admin may do this';
