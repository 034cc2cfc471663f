// `npm run structure`: the code's structure in figures, so a change can say what it did to them: the largest
// import cycle counting type imports, run-time cycles between folders, the files that import the composition
// root, unchecked container types, double casts and other casts, the largest source file, and lines past the
// formatter's width. Reads the import graph from dependency-cruiser (the same one `npm run deps` checks).
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const COMPOSITION_ROOT = 'shared/services.ts';
/** Generated files, not written by hand: the portal's API types. */
const GENERATED = /^portal\/src\/api-types\//;
const WIDTH = 120;

interface Cruised {
  modules: { source: string; dependencies: { resolved: string; dependencyTypes: string[] }[] }[];
}

/** The strongly connected components of a graph with more than one node (Tarjan's algorithm). */
function cycles(graph: Map<string, Set<string>>): string[][] {
  let index = 0;
  const stack: string[] = [];
  const on = new Set<string>();
  const indexes = new Map<string, number>();
  const low = new Map<string, number>();
  const found: string[][] = [];
  const visit = (v: string) => {
    indexes.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!indexes.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) ?? 0, low.get(w) ?? 0));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v) ?? 0, indexes.get(w) ?? 0));
    }
    if (low.get(v) === indexes.get(v)) {
      const component: string[] = [];
      for (let w = stack.pop(); w !== undefined; w = stack.pop()) {
        on.delete(w);
        component.push(w);
        if (w === v) break;
      }
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!indexes.has(v)) visit(v);
  return found.sort((a, b) => b.length - a.length);
}

/** Type assertions in a file (`x as T`, `<T>x`), those to `const` left out, and double ones (`as unknown as T`). */
function castsOf(file: string, text: string): { all: number; double: number } {
  const found = { all: 0, double: 0 };
  const walk = (node: ts.Node) => {
    if (ts.isAsExpression(node) || ts.isTypeAssertionExpression(node)) {
      const isConst = ts.isTypeReferenceNode(node.type) && node.type.typeName.getText() === 'const';
      if (!isConst) found.all++;
      const inner = ts.isAsExpression(node) ? node.expression : undefined;
      if (inner && ts.isAsExpression(inner) && inner.type.kind === ts.SyntaxKind.UnknownKeyword) found.double++;
    }
    ts.forEachChild(node, walk);
  };
  walk(ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true));
  return found;
}

/**
 * The unit of layering a file belongs to: its folder under shared/ (a file at shared/'s top is a unit of its own), or
 * functions/.
 */
const folderOf = (file: string) =>
  file.startsWith('shared/')
    ? path.dirname(file) === 'shared'
      ? file
      : path.dirname(file)
    : (file.split('/')[0] ?? file);

function files(dir: string): string[] {
  const full = path.join(root, dir);
  return readdirSync(full).flatMap((name) => {
    const rel = path.join(dir, name);
    if (name === 'node_modules' || name === 'dist') return [];
    return statSync(path.join(root, rel)).isDirectory() ? files(rel) : /\.(ts|tsx|mjs)$/.test(name) ? [rel] : [];
  });
}

export function structure() {
  const cruised = JSON.parse(
    execFileSync('npx', ['depcruise', 'shared', 'functions', '--config', '.dependency-cruiser.cjs', '-T', 'json'], {
      cwd: root,
      maxBuffer: 64 * 1024 * 1024,
    }).toString(),
  ) as Cruised;
  const local = cruised.modules.filter((m) => /^(shared|functions)\//.test(m.source));
  const all = new Map<string, Set<string>>();
  const folders = new Map<string, Set<string>>();
  for (const m of local) {
    all.set(
      m.source,
      new Set(m.dependencies.filter((d) => /^(shared|functions)\//.test(d.resolved)).map((d) => d.resolved)),
    );
    for (const d of m.dependencies) {
      if (!/^(shared|functions)\//.test(d.resolved) || d.dependencyTypes.includes('type-only')) continue;
      const [from, to] = [folderOf(m.source), folderOf(d.resolved)];
      if (from === to) continue;
      if (!folders.has(from)) folders.set(from, new Set());
      folders.get(from)?.add(to);
    }
  }
  const fileCycles = cycles(all);
  const folderCycles = cycles(folders);
  const importersOfRoot = local
    .filter((m) => m.source !== COMPOSITION_ROOT && m.dependencies.some((d) => d.resolved === COMPOSITION_ROOT))
    .map((m) => m.source);
  const code = [...files('shared'), ...files('functions')].filter((f) => f.endsWith('.ts'));
  const texts = new Map(code.map((f) => [f, readFileSync(path.join(root, f), 'utf8')]));
  const count = (pattern: RegExp) => [...texts.values()].reduce((n, t) => n + (t.match(pattern)?.length ?? 0), 0);
  const casts = [...texts]
    .map(([f, t]) => castsOf(f, t))
    .reduce((a, b) => ({ all: a.all + b.all, double: a.double + b.double }), { all: 0, double: 0 });
  const largest = [...texts]
    .map(([f, t]) => ({ file: f, lines: t.split('\n').length - 1 }))
    .sort((a, b) => b.lines - a.lines)[0];
  const everything = ['shared', 'functions', 'scripts', 'test', 'bench', 'portal/src']
    .flatMap(files)
    .filter((f) => !GENERATED.test(f));
  const wide = everything.reduce(
    (n, f) =>
      n +
      readFileSync(path.join(root, f), 'utf8')
        .split('\n')
        .filter((l) => l.length > WIDTH).length,
    0,
  );
  return {
    largestCycleWithTypes: fileCycles[0]?.length ?? 0,
    folderCycles: folderCycles.map((c) => c.join(' <-> ')),
    importersOfCompositionRoot: importersOfRoot.length,
    genericContainerCalls: count(/\.container<[^>]+>\(/g),
    doubleCasts: casts.double,
    casts: casts.all,
    largestFile: largest,
    linesWiderThan120: wide,
  };
}

/** `--check` (part of `npm run check`): fails on a run-time cycle between folders, which no file-level rule sees. */
function check(): void {
  const { folderCycles } = structure();
  for (const c of folderCycles) console.error(`A run-time import cycle between folders: ${c}`);
  if (folderCycles.length > 0) process.exit(1);
  console.log('no run-time cycle between folders');
}

if (
  process.argv[1] &&
  path.resolve(process.argv[1]) === fileURLToPath(import.meta.url) &&
  process.argv.includes('--check')
)
  check();
else if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const figures = structure();
  console.table([
    { measure: 'largest import cycle, type imports counted (files)', value: figures.largestCycleWithTypes },
    {
      measure: 'run-time cycles between folders',
      value:
        figures.folderCycles.length === 0
          ? 'none'
          : figures.folderCycles.map((c) => `${c.split(' <-> ').length} folders`).join(', '),
    },
    {
      measure: `files importing the composition root (${COMPOSITION_ROOT})`,
      value: figures.importersOfCompositionRoot,
    },
    { measure: '`.container<T>(` call sites', value: figures.genericContainerCalls },
    { measure: '`as unknown as`', value: figures.doubleCasts },
    { measure: 'casts other than `as const` (shared/, functions/)', value: figures.casts },
    {
      measure: 'largest source file (shared/, functions/)',
      value: `${figures.largestFile?.file ?? ''}: ${figures.largestFile?.lines ?? 0} lines`,
    },
    { measure: `lines wider than ${WIDTH} columns (not generated)`, value: figures.linesWiderThan120 },
  ]);
  if (process.argv.includes('--cycles')) for (const c of figures.folderCycles) console.log(`folder cycle: ${c}`);
}
