// Load helpers for the benchmarks: autocannon against loopback servers, summarised.
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';

export interface LoadResult {
  label: string;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

/** Sends load for `seconds` at `connections` concurrency; non-2xx answers count as errors. */
export async function load(
  label: string,
  url: string,
  options: {
    connections?: number;
    seconds?: number;
    method?: 'GET' | 'POST';
    headers?: Record<string, string>;
    body?: string;
  } = {},
): Promise<LoadResult> {
  const result = await autocannon({
    url,
    connections: options.connections ?? 32,
    duration: options.seconds ?? 3,
    method: options.method ?? 'GET',
    ...(options.headers ? { headers: options.headers } : {}),
    ...(options.body ? { body: options.body } : {}),
  });
  return {
    label,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.non2xx,
  };
}

export function report(baseline: LoadResult, results: LoadResult[]): void {
  const rows = [baseline, ...results].map((r) => ({
    case: r.label,
    'req/s': Math.round(r.rps),
    'p50 ms': r.p50,
    'p99 ms': r.p99,
    'vs baseline': `${(r.rps / baseline.rps).toFixed(2)}x`,
    errors: r.errors,
  }));
  console.table(rows);
}

export interface Request {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
}

/** One request on `agent`: its time in milliseconds, to the microsecond; anything but 200 rejects. */
export function timed(r: Request, agent: http.Agent): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const started = performance.now();
    const req = http.request(r.url, { method: r.method ?? 'GET', headers: r.headers ?? {}, agent }, (res) => {
      res.resume();
      res.on('end', () =>
        res.statusCode === 200
          ? resolve(performance.now() - started)
          : reject(new Error(`${r.url}: ${res.statusCode ?? 0}`)),
      );
    });
    req.on('error', reject);
    req.end(r.body);
  });
}

export interface PairedResult {
  a: { p50: number; p99: number; mean: number };
  b: { p50: number; p99: number; mean: number };
  /** What b adds over a: the differences of their percentiles. */
  added: { p50: number; p99: number };
}

/**
 * Concurrency 1 at sub-millisecond resolution: requests to `a` and `b` alternate on keep-alive
 * connections, so both see the same machine state (autocannon's histogram keeps whole milliseconds,
 * too coarse for a 3 ms budget).
 */
export async function paired(a: Request, b: Request, count: number): Promise<PairedResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const once = (r: Request) => timed(r, agent);
  const ta: number[] = [];
  const tb: number[] = [];
  for (let i = 0; i < count; i++) {
    const x = await once(a);
    const y = await once(b);
    ta.push(x);
    tb.push(y);
  }
  agent.destroy();
  const round = (ms: number) => Math.round(ms * 100) / 100;
  const pct = (values: number[], p: number) =>
    [...values].sort((m, n) => m - n)[Math.min(values.length - 1, Math.floor(values.length * p))] ?? 0;
  const summary = (v: number[]) => ({
    p50: round(pct(v, 0.5)),
    p99: round(pct(v, 0.99)),
    mean: round(v.reduce((m, n) => m + n, 0) / v.length),
  });
  return {
    a: summary(ta),
    b: summary(tb),
    added: { p50: round(pct(tb, 0.5) - pct(ta, 0.5)), p99: round(pct(tb, 0.99) - pct(ta, 0.99)) },
  };
}
