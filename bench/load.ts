// Load helpers for the benchmarks: autocannon against loopback servers, summarised.
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
  options: { connections?: number; seconds?: number; method?: 'GET' | 'POST'; headers?: Record<string, string>; body?: string } = {},
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
