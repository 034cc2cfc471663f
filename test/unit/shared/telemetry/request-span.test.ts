// One server span per request, tagged with route name, instance id and request id.
import { trace } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROUTES } from '../../../../functions/groups.js';
import { startTelemetry } from '../../../../shared/telemetry/setup.js';
import { call } from '../../../support/requests.js';
import { INSTANCE, testServices, type TestServices } from '../../../support/services.js';

describe('request spans', () => {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  let s: TestServices;
  beforeAll(async () => {
    trace.setGlobalTracerProvider(provider);
    s = await testServices();
  });
  afterAll(() => trace.disable());

  it('records a server span per request with the route name, instance id, request id and status', async () => {
    exporter.reset();
    await call(ROUTES, s, { path: `/instances/${INSTANCE}/branding`, headers: { 'x-request-id': 'span-1' } });
    await call(ROUTES, s, { path: `/instances/${INSTANCE}/status`, headers: { 'x-request-id': 'span-2' } });
    const spans = exporter.getFinishedSpans();
    expect(spans.map((x) => x.name)).toEqual(['branding-get', 'status-core-instance']);
    expect(spans[0]?.attributes).toMatchObject({
      'svc.route.name': 'branding-get',
      'svc.request_id': 'span-1',
      'Svc-InstanceId': INSTANCE,
      'http.response.status_code': 401,
    });
    expect(spans[1]?.attributes).toMatchObject({ 'svc.request_id': 'span-2', 'http.response.status_code': 200 });
  });

  it('exports nothing and loads no SDK without a connection string', async () => {
    expect(
      await startTelemetry({
        appInsightsConnectionString: undefined,
        azureClientId: undefined,
        otlp: undefined,
        version: 'test',
      }),
    ).toBe(false);
  });
});
