// Matches a method and path against the route table; literal segments win over parameters, as in the
// Functions host. Segments compare case-insensitively, parameters are percent-decoded.
import type { Route } from './route.js';

export type RouteMatch =
  | { kind: 'found'; route: Route; params: Record<string, string> }
  | { kind: 'method-not-allowed'; allow: string[] }
  | { kind: 'not-found' };

interface Compiled {
  route: Route;
  segments: ({ literal: string } | { param: string })[];
  literals: number;
}

export function createRouter(routes: readonly Route[]): (method: string, path: string) => RouteMatch {
  const bySize = new Map<number, Compiled[]>();
  for (const route of routes) {
    const segments = route.path
      .split('/')
      .filter((s) => s.length > 0)
      .map((s) =>
        /^\{(\w+)\}$/.exec(s)?.[1] !== undefined ? { param: s.slice(1, -1) } : { literal: s.toLowerCase() },
      );
    const compiled = { route, segments, literals: segments.filter((s) => 'literal' in s).length };
    const list = bySize.get(segments.length) ?? [];
    list.push(compiled);
    list.sort((a, b) => b.literals - a.literals);
    bySize.set(segments.length, list);
  }

  return (method, path) => {
    const parts = path.split('/').filter((s) => s.length > 0);
    const lower = parts.map((p) => p.toLowerCase());
    const allow: string[] = [];
    for (const c of bySize.get(parts.length) ?? []) {
      const params: Record<string, string> = {};
      const ok = c.segments.every((s, i) => {
        if ('literal' in s) return s.literal === lower[i];
        const value = decode(parts[i] ?? '');
        if (value === undefined || value.length === 0) return false;
        params[s.param] = value;
        return true;
      });
      if (!ok) continue;
      if (c.route.method === method) return { kind: 'found', route: c.route, params };
      allow.push(c.route.method);
    }
    return allow.length > 0 ? { kind: 'method-not-allowed', allow: [...new Set(allow)] } : { kind: 'not-found' };
  };
}

function decode(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}
