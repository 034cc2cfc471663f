// The documents against the repository: every repository path README.md, SECURITY.md and docs/*.md name
// (in code spans, code blocks, links and running text) exists, and every npm script they name is a script of
// package.json. A failure names the document and what it names that is not there.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');

const DOCUMENTS = [
  'README.md',
  'SECURITY.md',
  ...readdirSync(path.join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`),
];

/** The repository's top-level folders: a path that starts with one of them is a repository path. */
const FOLDERS = [
  '.ci',
  '.devcontainer',
  '.github',
  'bench',
  'docs',
  'examples',
  'functions',
  'infra',
  'portal',
  'scripts',
  'shared',
  'test',
];
const IN_A_FOLDER = new RegExp(`^(?:${FOLDERS.map((f) => f.replace('.', '\\.')).join('|')})/`);

/** A file name without a folder (`host.json`): a repository path only as a file at the top of the repository. */
const FILE_NAME = /^(?:\w[\w.-]*\.(?:ts|tsx|mts|js|mjs|cjs|json|md|yaml|yml|http|bicep|tf|wat|sh|toml)|Dockerfile)$/;

/** Names the documents give to files that are not the repository's, and what each is. */
const NOT_IN_REPOSITORY = new Map([
  ['librechat.yaml', "LibreChat's configuration"],
  ['manifest.json', 'the manifest inside a plugin or artifact package'],
  ['functions.json', 'the function table the build writes beside the deployed bundle'],
  ['app.cjs', 'the deployed bundle the build writes'],
  ['app.http', "the Functions programming model's registration of an HTTP function"],
]);

/**
 * What .gitignore names (plain paths, no patterns) is made by the build or at run time, not kept in the
 * repository: a document may name it (`portal/src/api-types/`), and a fresh clone does not have it yet.
 */
const GENERATED = read('.gitignore')
  .split('\n')
  .map((line) => line.trim().replace(/^\//, ''))
  .filter((line) => line && !line.startsWith('#') && !/[*?[!]/.test(line));
const generated = (p: string) =>
  GENERATED.some((g) => (g.endsWith('/') ? `${p}/`.startsWith(g) : p === g || p.startsWith(`${g}/`)));

/** A path segment that stands for names rather than naming one: `*`, `<name>`, `{id}`, `...`. */
const PLACEHOLDER = /[*<>]|\{[^{},]*\}|\.\.\./;

const scripts = new Set(Object.keys((JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts));

interface Parts {
  /** Code spans and code blocks. */
  code: { text: string; block: boolean }[];
  /** Link targets, relative to the document. */
  links: string[];
  /** The rest. */
  prose: string;
}

/** A markdown document cut into its code (blocks and spans), its link targets and its running text. */
function parts(markdown: string): Parts {
  const code: Parts['code'] = [];
  const links: string[] = [];
  const prose = markdown
    .replace(
      /^ {0,3}(```|~~~)[^\n]*\n([\s\S]*?)^ {0,3}\1[ \t]*$/gm,
      (_all, _fence, body: string) => (code.push({ text: body, block: true }), '\n'),
    )
    .replace(/(`+)([\s\S]+?)\1/g, (_all, _ticks, body: string) => (code.push({ text: body, block: false }), ' '))
    .replace(/\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)/g, (_all, target: string) => (links.push(target), '] '))
    .replace(/^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?=\s|$)/gm, (_all, target: string) => (links.push(target), ''));
  return { code, links, prose };
}

/** Brace lists as a shell expands them: `a/{b,c}.ts` is `a/b.ts` and `a/c.ts`. */
function expand(p: string): string[] {
  const m = /\{([^{}]*,[^{}]*)\}/.exec(p);
  if (!m) return [p];
  return (m[1] ?? '').split(',').flatMap((alt) => expand(p.slice(0, m.index) + alt + p.slice(m.index + m[0].length)));
}

const isFolder = (full: string) => existsSync(full) && statSync(full).isDirectory() && readdirSync(full).length > 0;

/** Why a repository path does not hold (a trailing slash asks for a folder), or undefined when it does. */
function check(p: string): string | undefined {
  if (generated(p)) return undefined;
  const segments = p.split('/');
  const at = segments.findIndex((s) => PLACEHOLDER.test(s));
  if (at >= 0) {
    // A pattern: the folder before its first placeholder must exist.
    const folder = segments.slice(0, at).join('/');
    return at === 0 || isFolder(path.join(ROOT, folder)) ? undefined : `${p} (no folder ${folder}/)`;
  }
  const full = path.join(ROOT, p);
  if (p.endsWith('/')) return isFolder(full) ? undefined : `${p} (no such folder)`;
  return existsSync(full) ? undefined : `${p} (no such file or folder)`;
}

/** The words of a text, with the punctuation around them dropped (commas inside a brace list kept). */
function words(text: string): string[] {
  return text
    .replace(/\{[^{}\s]*\}/g, (list) => list.replaceAll(',', '\u0000'))
    .split(/[\s,;()[\]!"'=|]+/)
    .map((w) => w.replaceAll('\u0000', ',').replace(/^\.\//, '').replace(/:\d+$/, ''))
    .map((w) => (w.endsWith('...') ? w : w.replace(/[.:]+$/, '')))
    .filter((w) => w && !w.includes('://'));
}

/** What a document names that is not there. */
function missingPaths(doc: string): string[] {
  const { code, links, prose } = parts(read(doc));
  const missing: string[] = [];
  const checkPath = (p: string) => {
    for (const one of expand(p)) {
      const why = check(one);
      if (why) missing.push(why);
    }
  };
  for (const { text, block } of code) {
    for (const word of words(text)) {
      if (IN_A_FOLDER.test(word)) checkPath(word);
      else if (block) continue;
      else if (word.startsWith('../')) missing.push(`${word} (outside the repository)`);
      else if (FILE_NAME.test(word) && !NOT_IN_REPOSITORY.has(word) && check(word))
        missing.push(`${word} (no such file at the top of the repository)`);
    }
  }
  for (const word of words(prose)) if (IN_A_FOLDER.test(word)) checkPath(word);
  for (const link of links) {
    if (!link || /^[a-z][a-z0-9+.-]*:/i.test(link) || link.startsWith('#') || link.startsWith('/')) continue;
    const target = path.posix.normalize(path.posix.join(path.posix.dirname(doc), decodeURI(link.split('#')[0] ?? '')));
    if (target.startsWith('../')) missing.push(`link ${link} (outside the repository)`);
    else {
      const why = check(target === '.' ? './' : target);
      if (why) missing.push(target === link ? `link ${why}` : `link ${link}: ${why}`);
    }
  }
  return [...new Set(missing)];
}

/**
 * The npm scripts a document names: `npm run <script>` (`-s` and `--silent` allowed before it), `npm start`, `npm
 * test`.
 */
function scriptsNamed(doc: string): string[] {
  const text = read(doc);
  const run = [...text.matchAll(/\bnpm\s+run(?:-script)?\s+(?:(?:-s|--silent)\s+)*([\w:.-]+)/g)].map((m) => m[1] ?? '');
  const short = [...text.matchAll(/\bnpm\s+(start|stop|restart|test)\b/g)].map((m) => m[1] ?? '');
  return [...new Set([...run, ...short])];
}

describe('the documents parsed', () => {
  it('finds paths in code spans, code blocks, links and text, and scripts however they are run', () => {
    const { code, links, prose } = parts(
      'See `shared/a.ts` and [b](b.md).\n\n```sh\nnpm run -s token\n```\nAlso shared/c.ts.\n',
    );
    expect(code).toEqual([
      { text: 'npm run -s token\n', block: true },
      { text: 'shared/a.ts', block: false },
    ]);
    expect(links).toEqual(['b.md']);
    expect(words(prose)).toContain('shared/c.ts');
    expect(words('shared/http/{node-host,azure-host}.ts, then npm test.').flatMap(expand)).toContain(
      'shared/http/azure-host.ts',
    );
  });

  it('tells a missing path, a file asked for as a folder, and patterns apart', () => {
    expect(check('shared/config.ts')).toBeUndefined();
    expect(check('shared/config.ts/')).toBe('shared/config.ts/ (no such folder)');
    expect(check('shared/nothing-here.ts')).toBe('shared/nothing-here.ts (no such file or folder)');
    expect(check('shared/providers/types/<kind>.ts')).toBeUndefined();
    expect(check('shared/nothing/*.ts')).toBe('shared/nothing/*.ts (no folder shared/nothing/)');
    expect(check('portal/src/api-types/core.ts')).toBeUndefined();
  });
});

describe.each(DOCUMENTS)('%s', (doc) => {
  it('names only paths the repository has', () => {
    expect(missingPaths(doc), `${doc} names paths the repository does not have`).toEqual([]);
  });

  it('names only npm scripts package.json has', () => {
    const unknown = scriptsNamed(doc)
      .filter((s) => !scripts.has(s))
      .map((s) => (['start', 'stop', 'restart', 'test'].includes(s) ? `npm ${s}` : `npm run ${s}`));
    expect(unknown, `${doc} names npm scripts package.json does not have`).toEqual([]);
  });
});
