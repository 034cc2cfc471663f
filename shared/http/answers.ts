// A route's answers follow from its documented responses. At compile time a handler may answer only the
// statuses the route documents, a JSON body of such a status typed by its schema (`Answer`); at run time,
// when the pipeline checks answers (development and tests), a JSON answer that does not match its schema is
// found here (`answerDrift`), so the OpenAPI document and the handlers cannot drift apart unnoticed.
import type { z } from 'zod';
import type { JsonReply, Reply, ResponseDoc } from './types.js';

/** A route's documented responses, by status. */
export type Responses = Readonly<Record<number, ResponseDoc>>;

type JsonMedia<C> = C extends { readonly contentType: 'application/json'; readonly schema: infer S extends z.ZodType }
  ? Wire<z.output<S>>
  : never;

/**
 * A body as the handler may hand it over: read-only all the way down, so that read-only values and the
 * literals `json()` keeps (`{ status: 'live' }`, tuples) are accepted where the schema says `string[]`; and a
 * loose object that names its keys (`z.looseObject`) without its `[key: string]: unknown`, which an
 * interface with those keys lacks and any object with them satisfies.
 */
export type Wire<T> = T extends readonly (infer E)[]
  ? readonly Wire<E>[]
  : T extends object
    ? { readonly [K in keyof T as LooseKey<T, K>]: Wire<T[K]> }
    : T;

type KnownKeys<T> = keyof { [K in keyof T as string extends K ? never : number extends K ? never : K]: 0 };
type LooseKey<T, K extends keyof T> = string extends K
  ? unknown extends T[K]
    ? [KnownKeys<T>] extends [never]
      ? K
      : never
    : K
  : K;

/**
 * The JSON body a documented response carries (what the OpenAPI document shows: the schema's output form),
 * or never when it documents none: a `schema` that is JSON (no `contentType`, or application/json), or the
 * application/json one of its `content`.
 */
export type JsonBody<D> = D extends { readonly content: readonly (infer C)[] }
  ? JsonMedia<C>
  : D extends { readonly schema: infer S extends z.ZodType }
    ? D extends { readonly contentType: infer T }
      ? T extends 'application/json'
        ? Wire<z.output<S>>
        : never
      : Wire<z.output<S>>
    : never;

/** A reply without a JSON body: raw bytes or text, a stream, or nothing. */
export interface BodilessReply<S extends number = number> extends Reply<S> {
  json?: undefined;
}

type AnswerTo<K extends number, D> =
  BodilessReply<K> | ([JsonBody<D>] extends [never] ? never : JsonReply<K, JsonBody<D>>);

/**
 * What a handler of a route documenting `R` may answer: one of its statuses, with a JSON body of that
 * status's schema or with no JSON body; 304 Not Modified to a conditional request (no body, not documented
 * route by route); or a relayed reply. A route whose statuses are not known (a route held with its types
 * erased) or that documents none (a test's fixture) answers any reply.
 */
export type Answer<R> = number extends keyof R
  ? Reply
  : [keyof R] extends [never]
    ? Reply
    : { [K in keyof R]: AnswerTo<StatusOf<K>, R[K]> }[keyof R] | BodilessReply<304> | RelayedReply;

const RELAYED = Symbol('relayed');

/**
 * A reply another implementation decided (the MCP SDK's transport, the completion pipeline's stream or
 * operation): its status and body are that code's, so the compiler cannot hold them to the route's
 * responses; the run-time check still does.
 */
export interface RelayedReply extends Reply {
  readonly [RELAYED]: true;
}

/** Marks a reply as relayed (see RelayedReply). */
export const relayed = (reply: Reply): RelayedReply => ({ ...reply, [RELAYED]: true });

/**
 * A key of `responses` as a status: a spread (`{ ...ok, 413: ... }`) turns numeric keys into strings. A
 * conditional type also on purpose: while a route's types are still being inferred, TypeScript keeps a
 * handler's `status: 204` literal only where the status it is checked against is such a type.
 */
type StatusOf<K> = K extends number ? K : K extends `${infer N extends number}` ? N : never;

/** The JSON schema a response documents: its JSON `schema`, or the application/json one of its `content`. */
export function jsonSchemaOf(doc: ResponseDoc | undefined): z.ZodType | undefined {
  if (doc?.content) return doc.content.find((c) => c.contentType === 'application/json')?.schema;
  return (doc?.contentType ?? 'application/json') === 'application/json' ? doc?.schema : undefined;
}

/** Why an answer is not what its route documents. */
export interface AnswerDrift {
  status: number;
  problem: string;
  issues: readonly z.core.$ZodIssue[];
}

/**
 * How a handler's answer differs from what the route documents for its status, or undefined when it does
 * not: a JSON body must match the status's schema, and a success status must document one. Bodies of
 * other media types, error statuses without a schema (the route's error envelope), and routes that
 * document no response at all (test fixtures) are not checked.
 */
export function answerDrift(responses: Responses, reply: Reply): AnswerDrift | undefined {
  if (reply.json === undefined || Object.keys(responses).length === 0) return undefined;
  const { status } = reply;
  const schema = jsonSchemaOf(responses[status]);
  if (!schema) {
    if (status >= 400) return undefined;
    return { status, problem: `status ${status} documents no JSON body`, issues: [] };
  }
  const result = schema.safeParse(reply.json);
  return result.success
    ? undefined
    : { status, problem: 'the body does not match its schema', issues: result.error.issues };
}
