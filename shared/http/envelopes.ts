// The three error bodies of the spec, each built here and nowhere else.
import type { ApiError } from './errors.js';
import type { Reply } from './types.js';

/**
 * Envelope styles: `core` is the Core API body (validation errors carry `details`), `management` the
 * Management API body, `problem` the problem-details body of agent property actions.
 */
export type ErrorStyle = 'core' | 'management' | 'problem';

/** Builds the reply for an ApiError in the given style; `instance` is the request path. */
export function errorReply(error: ApiError, style: ErrorStyle, instance: string): Reply {
  const headers = { ...error.headers };
  if (error.body !== undefined) return { status: error.status, headers, json: error.body };
  switch (style) {
    case 'core':
      // Every Core API 400 rejects input: the validation error body of spec 2.7, with its details.
      if (error.status === 400) {
        const details = error.details.length > 0 ? error.details : [{ field: 'request', message: error.message }];
        return { status: 400, headers, json: { error: { code: 'ValidationError', message: error.message, details } } };
      }
      return {
        status: error.status,
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
      return { status: error.status, headers, json: { error: { code: managementCode(error), message: error.message } } };
    case 'problem':
      return {
        status: error.status,
        headers: { ...headers, 'content-type': 'application/problem+json' },
        json: { type: problemType(error.status), title: error.code, status: error.status, detail: error.message, instance },
      };
  }
}

// The Management API answers validation failures with its own BadRequest code (spec part 7).
const managementCode = (error: ApiError) => (error.code === 'ValidationError' ? 'BadRequest' : error.code);

const problemType = (status: number) => `https://httpstatuses.io/${status}`;
