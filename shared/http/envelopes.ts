// The three error bodies of the APIs (docs/api-decisions.md, Errors), each built here and nowhere else.
import type { DomainError, ErrorKind } from '../errors.js';
import type { Reply } from './types.js';

/**
 * Envelope styles: `core` is the Core API body (validation errors carry `details`), `management` the
 * Management API body, `problem` the problem-details body of agent property actions, `openai` the body of
 * the OpenAI API (the OpenAI-compatible facade).
 */
export type ErrorStyle = 'core' | 'management' | 'problem' | 'openai';

/** The one place an error kind becomes an HTTP status. */
const STATUS: Readonly<Record<ErrorKind, number>> = {
  invalid: 400,
  unauthenticated: 401,
  forbidden: 403,
  'not-found': 404,
  'method-not-allowed': 405,
  misdirected: 421,
  'request-timeout': 408,
  conflict: 409,
  'too-large': 413,
  'unsupported-media-type': 415,
  'headers-too-large': 431,
  'rate-limited': 429,
  internal: 500,
  'upstream-failed': 502,
  unavailable: 503,
  'upstream-timeout': 504,
};

export const statusOf = (error: DomainError) => STATUS[error.kind];

/** Builds the reply for a DomainError in the given style; `instance` is the request path. */
export function errorReply(error: DomainError, style: ErrorStyle, instance: string): Reply {
  const headers = { ...error.headers };
  const status = statusOf(error);
  if (style === 'openai') return { status, headers, json: openaiError(error, status) };
  if (error.body !== undefined) return { status, headers, json: error.body };
  switch (style) {
    case 'core':
      // Every Core API 400 rejects input: the validation error body, with its details (docs/api-decisions.md, Errors).
      if (status === 400) {
        const details = error.details.length > 0 ? error.details : [{ field: 'request', message: error.message }];
        return { status: 400, headers, json: { error: { code: 'ValidationError', message: error.message, details } } };
      }
      return {
        status,
        headers,
        json: {
          error: {
            code: error.code,
            message: error.message,
            ...(error.details.length > 0 ? { details: error.details } : {}),
          },
        },
      };
    case 'management':
      return { status, headers, json: { error: { code: managementCode(error), message: error.message } } };
    case 'problem':
      return {
        status,
        headers: { ...headers, 'content-type': 'application/problem+json' },
        json: { type: problemType(status), title: error.code, status, detail: error.message, instance },
      };
  }
}

/**
 * OpenAI's error body: `type` by status as OpenAI names them, `param` the first field at fault, `code` OpenAI's where
 * one applies (invalid_api_key, rate_limit_exceeded, insufficient_quota), else this service's (model_not_found, ...).
 */
function openaiError(error: DomainError, status: number) {
  // A spent budget is what OpenAI calls an insufficient quota; a request or token quota is its rate limit.
  const spent = error.code === 'BudgetExceeded';
  const type =
    status === 401 || status < 403 || status === 404 || status === 409 || status === 413 || status === 415
      ? 'invalid_request_error'
      : status === 403
        ? 'permission_error'
        : spent
          ? 'insufficient_quota'
          : status === 429
            ? 'rate_limit_error'
            : 'server_error';
  const code =
    status === 401
      ? 'invalid_api_key'
      : spent
        ? 'insufficient_quota'
        : status === 429
          ? 'rate_limit_exceeded'
          : error.code === 'ValidationError' || error.code === 'BadRequest'
            ? null
            : snakeCase(error.code);
  return { error: { message: error.message, type, param: error.details[0]?.field ?? null, code } };
}

const snakeCase = (code: string) => code.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();

// The Management API answers validation failures with its own BadRequest code.
const managementCode = (error: DomainError) => (error.code === 'ValidationError' ? 'BadRequest' : error.code);

const problemType = (status: number) => `https://httpstatuses.io/${status}`;
