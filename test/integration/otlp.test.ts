// Telemetry beyond Azure (issue 19): with OTEL_EXPORTER_OTLP_ENDPOINT set, the OpenTelemetry SDK's own OTLP/HTTP
// exporters send the request spans and the service's metrics (request duration by route, model latency and
// tokens, quota rejections, queue depth and age) to a collector: here a real HTTP receiver on loopback.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockLlm, type MockLlm } from '../../scripts/mock-llm.js';
import { stopTelemetry, startTelemetry } from '../../shared/telemetry/setup.js';
import { seedAgent } from '../support/agents.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { INSTANCE } from '../support/services.js';

interface KeyValue {
  key: string;
  value: { stringValue?: string; intValue?: string | number; doubleValue?: number };
}
interface DataPoint {
  attributes?: KeyValue[];
  count?: string | number;
  sum?: number;
  asInt?: string | number;
  asDouble?: number;
}
interface Metric {
  name: string;
  unit?: string;
  histogram?: { dataPoints: DataPoint[] };
  sum?: { dataPoints: DataPoint[] };
  gauge?: { dataPoints: DataPoint[] };
}
interface Resource {
  attributes: KeyValue[];
}

/** An OTLP/HTTP (JSON) collector: keeps what arrives at /v1/traces and /v1/metrics. */
async function startCollector() {
  const received = {
    traces: [] as { resource: Resource; spans: { name: string; attributes?: KeyValue[] }[] }[],
    metrics: [] as { resource: Resource; metrics: Metric[] }[],
    contentTypes: new Set<string>(),
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.contentTypes.add(req.headers['content-type'] ?? '');
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
      if (req.url === '/v1/traces') {
        for (const r of (body.resourceSpans ?? []) as {
          resource: Resource;
          scopeSpans: { spans: { name: string }[] }[];
        }[]) {
          received.traces.push({ resource: r.resource, spans: r.scopeSpans.flatMap((s) => s.spans) });
        }
      } else if (req.url === '/v1/metrics') {
        for (const r of (body.resourceMetrics ?? []) as {
          resource: Resource;
          scopeMetrics: { metrics: Metric[] }[];
        }[]) {
          received.metrics.push({ resource: r.resource, metrics: r.scopeMetrics.flatMap((s) => s.metrics) });
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const attr = (kvs: KeyValue[] | undefined, key: string) => {
  const v = kvs?.find((a) => a.key === key)?.value;
  return v?.stringValue ?? v?.intValue ?? v?.doubleValue;
};
const points = (m: Metric) => m.histogram?.dataPoints ?? m.sum?.dataPoints ?? m.gauge?.dataPoints ?? [];
const value = (p: DataPoint) => Number(p.asInt ?? p.asDouble ?? p.sum ?? 0);

describe('OpenTelemetry export over OTLP', () => {
  let collector: Awaited<ReturnType<typeof startCollector>>;
  let llm: MockLlm;
  let app: TestApp;
  const QUOTA = 'Svc:Quota:Definitions';

  beforeAll(async () => {
    collector = await startCollector();
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = collector.url;
    expect(
      await startTelemetry({
        appInsightsConnectionString: undefined,
        azureClientId: undefined,
        otlp: { endpoint: collector.url, metricIntervalMs: 200, serviceName: 'otlp-test' },
        version: 'test',
      }),
    ).toBe(true);
    llm = await startMockLlm();
    // No consumer: async completions wait in the queue, so its depth and age are there to read.
    app = await startTestApp({ MODEL_MAX_RETRIES: '0' }, { consumers: false });
    await seedAgent(app, 'otlp', { llmUrl: llm.url });
  });
  afterAll(async () => {
    await app.close();
    await llm.close();
    await stopTelemetry();
    await collector.close();
    delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
  });

  it('sends request spans and the metrics of requests, model calls, quota rejections and queues', async () => {
    const core = (path: string) => `${app.core}/instances/${INSTANCE}${path}`;
    expect(
      (await app.call('POST', core('/completions'), { body: { user_prompt: 'hello', agent_name: 'otlp' } })).status,
    ).toBe(200);
    expect(
      (await app.call('POST', core('/async-completions'), { body: { user_prompt: 'later', agent_name: 'otlp' } }))
        .status,
    ).toBe(202);
    const quota = {
      name: 'OneOnly',
      context: 'CoreAPI:Completions:otlp',
      metric_partition: 'UserPrincipalName',
      metric_limit: 1,
      metric_window_seconds: 3600,
    };
    expect(
      (
        await app.call(
          'POST',
          `${app.management}/instances/${INSTANCE}/providers/Svc.Configuration/appConfigurations/${QUOTA}`,
          { body: { name: QUOTA, key: QUOTA, value: JSON.stringify([quota]) } },
        )
      ).status,
    ).toBe(200);
    expect(
      (await app.call('POST', core('/completions'), { body: { user_prompt: 'one', agent_name: 'otlp' } })).status,
    ).toBe(200);
    expect(
      (await app.call('POST', core('/completions'), { body: { user_prompt: 'two', agent_name: 'otlp' } })).status,
    ).toBe(429);

    const latest = (name: string) =>
      collector.received.metrics
        .flatMap((r) => r.metrics)
        .filter((m) => m.name === name)
        .at(-1);
    await expect
      .poll(
        () =>
          [
            'http.server.request.duration',
            'gen_ai.client.operation.duration',
            'gen_ai.client.token.usage',
            'svc.quota.rejections',
            'svc.queue.depth',
            'svc.queue.age',
          ].filter((n) => !latest(n)),
        { timeout: 15_000, interval: 200 },
      )
      .toEqual([]);

    const requests = points(latest('http.server.request.duration')!);
    const created = requests.filter((p) => attr(p.attributes, 'svc.route.name') === 'completions-create');
    expect(created.find((p) => attr(p.attributes, 'http.response.status_code') === 200)?.count).toBeDefined();
    expect(Number(created.find((p) => attr(p.attributes, 'http.response.status_code') === 200)?.count)).toBe(2);
    expect(Number(created.find((p) => attr(p.attributes, 'http.response.status_code') === 429)?.count)).toBe(1);
    expect(attr(created[0]?.attributes, 'http.route')).toBe('/instances/{instanceId}/completions');
    expect(latest('http.server.request.duration')?.unit).toBe('s');

    const tokens = points(latest('gen_ai.client.token.usage')!);
    expect(tokens.map((p) => attr(p.attributes, 'gen_ai.token.type')).sort()).toEqual(['input', 'output']);
    expect(
      tokens.every(
        (p) =>
          attr(p.attributes, 'gen_ai.request.model') === 'otlp-deployment' &&
          Number(p.count) === 2 &&
          Number(p.sum) > 0,
      ),
    ).toBe(true);
    expect(Number(points(latest('gen_ai.client.operation.duration')!)[0]?.count)).toBe(2);

    const rejections = points(latest('svc.quota.rejections')!);
    expect(rejections.map((p) => [attr(p.attributes, 'svc.quota.name'), value(p)])).toEqual([['OneOnly', 1]]);

    const queue = app.env.ASYNC_COMPLETIONS_QUEUE;
    const depth = points(latest('svc.queue.depth')!).find(
      (p) => attr(p.attributes, 'messaging.destination.name') === queue,
    );
    expect(depth && value(depth)).toBe(1);
    await expect
      .poll(
        () => {
          const age = points(latest('svc.queue.age')!).find(
            (p) => attr(p.attributes, 'messaging.destination.name') === queue,
          );
          return age ? value(age) : 0;
        },
        { timeout: 10_000 },
      )
      .toBeGreaterThan(0);

    // Spans, under the configured service name, carrying the route.
    await expect
      .poll(() => collector.received.traces.flatMap((t) => t.spans).some((s) => s.name === 'completions-create'), {
        timeout: 15_000,
      })
      .toBe(true);
    const batch = collector.received.traces.find((t) => t.spans.some((s) => s.name === 'completions-create'))!;
    expect(attr(batch.resource.attributes, 'service.name')).toBe('otlp-test');
    expect(batch.spans.some((s) => s.name.startsWith('chat otlp-deployment'))).toBe(true);
    expect([...collector.received.contentTypes]).toEqual(['application/json']);
  });
});
