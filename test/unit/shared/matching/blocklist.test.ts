// The blocklist sees a text as a reader does: look-alike letters as their plain forms and no invisible
// characters inside a word, for terms and expressions alike.
import { describe, expect, it } from 'vitest';
import { compileBlocklist, type Blocklist } from '../../../../shared/matching/blocklist.js';

const list = (entries: string[]): Blocklist => {
  const compiled = compileBlocklist(JSON.stringify(entries));
  if (typeof compiled === 'string') throw new Error(compiled);
  return compiled;
};

describe('the blocklist', () => {
  const blocklist = list(['forbidden-word', '/secret\\s+plan/i']);

  it.each([
    ['full-width letters', 'say ｆｏｒｂｉｄｄｅｎ－ｗｏｒｄ'],
    ['a zero-width space inside the word', 'say forbid\u200Bden-word'],
    ['a zero-width joiner and a soft hyphen', 'say for\u200Dbid\u00ADden-word'],
    ['a word joiner and capitals', 'say FORBIDDEN\u2060-WORD'],
    ['an expression split by a zero-width space', 'the se\u200Bcret plan'],
    ['an expression in full-width letters', 'the ｓｅｃｒｅｔ plan'],
  ])('matches %s', (_, text) => {
    expect(blocklist.match(text)).toMatch(/^matches the blocklist entry /);
  });

  it('leaves other text alone, visible spaces kept as spaces', () => {
    expect(blocklist.match('a forbidden word, said plainly')).toBeUndefined();
    expect(blocklist.match('secretplan')).toBeUndefined();
  });
});
