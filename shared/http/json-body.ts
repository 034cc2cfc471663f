// Reading a JSON request body: declared as JSON (415 otherwise), valid UTF-8, valid JSON, nested no deeper
// than the stores hold, and with well-formed strings (no lone surrogates), so nothing is stored changed.
import { DomainError, validationError } from '../errors.js';
import type { PlatformRequest } from './types.js';

/** Deepest nesting of objects and arrays accepted in a body (the stores hold more; nothing needs this much). */
export const MAX_JSON_DEPTH = 64;

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;\s*charset\s*=\s*"?utf-8"?\s*)?$/i;
const utf8 = new TextDecoder('utf-8', { fatal: true });
const invalid = (message: string) => validationError([{ field: 'body', message }]);

/** Whether `text` nests arrays and objects deeper than `max`; a scan that never recurses. */
export function nestsDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}

/** Whether every string and key in a parsed value is well-formed Unicode. */
function wellFormed(value: unknown): boolean {
  if (typeof value === 'string') return value.isWellFormed();
  if (Array.isArray(value)) return value.every(wellFormed);
  if (typeof value === 'object' && value !== null)
    return Object.entries(value).every(([k, v]) => k.isWellFormed() && wellFormed(v));
  return true;
}

/** Parses JSON text under the rules above; throws a 400 validation error naming `what` was parsed. */
export function parseJsonText(text: string, what = 'Request body'): unknown {
  if (nestsDeeperThan(text, MAX_JSON_DEPTH)) throw invalid(`${what} nests deeper than ${MAX_JSON_DEPTH} levels`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw invalid(`${what} is not valid JSON`);
  }
  if (!wellFormed(value)) throw invalid(`${what} has a string that is not valid Unicode`);
  return value;
}

/** The request's JSON body, or undefined when it has none; 415 when it is not declared as JSON. */
export async function readJsonBody(request: PlatformRequest, limit: number): Promise<unknown> {
  const bytes = await request.body(limit);
  if (bytes.length === 0) return undefined;
  const type = request.header('content-type');
  if (type === undefined || !JSON_TYPE.test(type.trim())) {
    throw new DomainError(
      'unsupported-media-type',
      'UnsupportedMediaType',
      'The body must be sent as application/json',
      { details: [{ field: 'content-type', message: 'must be application/json' }] },
    );
  }
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw invalid('Request body is not valid UTF-8');
  }
  return parseJsonText(text);
}
