// JSON bodies: depth is measured without recursion and strings inside strings do not count.
import { describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH, nestsDeeperThan, parseJsonText } from '../../../../shared/http/json-body.js';

describe('JSON bodies', () => {
  it('measures nesting depth, ignoring brackets inside strings and escaped quotes', () => {
    expect(nestsDeeperThan('[[[]]]', 3)).toBe(false);
    expect(nestsDeeperThan('[[[[]]]]', 3)).toBe(true);
    expect(nestsDeeperThan('{"a":"[[[[[[[[","b":"\\"[[[["}', 1)).toBe(false);
    expect(nestsDeeperThan('['.repeat(1_000_000), MAX_JSON_DEPTH)).toBe(true);
  });

  it('refuses invalid JSON, deep JSON and lone surrogates with a 400 naming what was parsed', () => {
    expect(() => parseJsonText('{', 'manifest.json')).toThrow('manifest.json is not valid JSON');
    expect(() => parseJsonText(`${'['.repeat(65)}${']'.repeat(65)}`)).toThrow('nests deeper than 64');
    expect(() => parseJsonText('{"\\udc00":1}')).toThrow('not valid Unicode');
    expect(parseJsonText('{"ok":"\\ud83d\\ude00"}')).toEqual({ ok: '😀' });
  });
});
