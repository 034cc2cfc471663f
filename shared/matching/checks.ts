// The rule checks of an evaluation case: contains, not_contains, regex and json_schema, compiled when the
// evaluation is saved (a bad expression or schema is a 400 then, not a failed run later). Expressions run
// on the linear-time engine (re2js), the schema's `pattern`s too, so no answer can make a check slow.
import { Ajv, type ValidateFunction } from 'ajv';
import { RE2JS } from 're2js';
import { z } from 'zod';
import { MAX_PROGRAM_SIZE } from './blocklist.js';

const Texts = z.union([z.string().min(1).max(1000), z.array(z.string().min(1).max(1000)).min(1).max(20)]);

export const Expect = z
  .object({
    contains: Texts.optional().describe('Text (or each of several texts) the answer must contain, ignoring case'),
    not_contains: Texts.optional().describe(
      'Text (or each of several texts) the answer must not contain, ignoring case',
    ),
    regex: z.string().min(1).max(1000).optional().describe('An RE2 expression the answer must match somewhere'),
    json_schema: z
      .record(z.string(), z.unknown())
      .refine((v) => JSON.stringify(v).length <= 8192, 'json_schema must be at most 8 KiB of JSON')
      .optional()
      .describe('A JSON Schema the answer, read as JSON (a ```json fence around it is allowed), must satisfy'),
    judge: z.string().min(1).max(4000).optional().describe('A rubric the judge model grades the answer by'),
    judge_ai_model_object_id: z.string().optional().describe("This case's judge model, instead of the evaluation's"),
  })
  .strict()
  .refine((e) => Object.keys(e).some((k) => k !== 'judge_ai_model_object_id'), 'expect names at least one check');
export type Expect = z.output<typeof Expect>;

/** RE2 for ajv's `pattern` keyword: the same linear-time engine as the regex check. */
const re2 = Object.assign(
  (pattern: string) => {
    const compiled = RE2JS.compile(pattern);
    return { test: (text: string) => compiled.matcher(text).find() };
  },
  { code: 're2js' },
);
/** Made at the first schema check: its meta-schemas cost milliseconds that most processes never need. */
let made: Ajv | undefined;
const ajv = () => (made ??= new Ajv({ allErrors: false, strict: false, code: { regExp: re2 } }));

/** A case's rule checks ready to run; the judge's rubric is graded separately (judge.ts). */
export interface CompiledChecks {
  /** Why the answer fails the rules, or undefined when it passes them. */
  failure(answer: string): string | undefined;
}

const list = (v: string | string[] | undefined) => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

/** The JSON an answer holds: the whole text, or the inside of a ```json fence. */
function answerJson(answer: string): { value: unknown } | undefined {
  const fenced = /```(?:json)?\s*\n([\s\S]*?)\n?```/.exec(answer);
  try {
    const value: unknown = JSON.parse((fenced?.[1] ?? answer).trim());
    return { value };
  } catch {
    return undefined;
  }
}

/** Compiles a case's checks; throws an Error saying what is wrong with an expression or schema. */
export function compileChecks(expect: Expect): CompiledChecks {
  let regex: RE2JS | undefined;
  let schema: ValidateFunction | undefined;
  if (expect.regex !== undefined) {
    try {
      regex = RE2JS.compile(expect.regex);
    } catch (e) {
      throw new Error(
        `regex is not an expression the linear-time engine (RE2 syntax: no backreferences or lookaround) can ` +
          `run: ${e instanceof Error ? e.message : String(e)}`,
        { cause: e },
      );
    }
    if (regex.programSize() > MAX_PROGRAM_SIZE)
      throw new Error(`regex compiles to ${regex.programSize()} instructions; at most ${MAX_PROGRAM_SIZE} are allowed`);
  }
  if (expect.json_schema !== undefined) {
    try {
      schema = ajv().compile(expect.json_schema);
    } catch (e) {
      throw new Error(`json_schema is not a schema: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
    }
  }
  return {
    failure(answer) {
      const folded = answer.toLowerCase();
      for (const text of list(expect.contains))
        if (!folded.includes(text.toLowerCase())) return `the answer does not contain "${text}"`;
      for (const text of list(expect.not_contains))
        if (folded.includes(text.toLowerCase())) return `the answer contains "${text}"`;
      if (regex && !regex.matcher(answer).find()) return `the answer does not match ${expect.regex ?? ''}`;
      if (schema) {
        const parsed = answerJson(answer);
        if (!parsed) return 'the answer is not JSON';
        if (!schema(parsed.value))
          return `the answer's JSON does not satisfy the schema: ${ajv().errorsText(schema.errors)}`;
      }
      return undefined;
    },
  };
}
