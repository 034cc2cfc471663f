// Knowledge set-up through the Management API, as a user would do it: an agent, an embedding model on the
// same endpoint, a data source, a pipeline, a knowledge tool on the agent; and a web server of documents.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'vitest';
import type { MockLlm } from '../../../scripts/mock-llm.js';
import type { Citation } from '../../../shared/knowledge/retrieval.js';
import { providers, type ApiClient } from '../../support/app.js';
import { seedAgent, type AgentOptions } from '../../support/agents.js';
import { INSTANCE } from '../../support/services.js';

export const objectId = (provider: string, type: string, name: string) =>
  `/instances/${INSTANCE}/providers/${provider}/${type}/${name}`;

export async function upsert(
  app: ApiClient,
  provider: string,
  type: string,
  name: string,
  body: Record<string, unknown>,
): Promise<void> {
  const r = await app.call('POST', `${providers(app, provider)}/${type}/${name}`, { body: { name, ...body } });
  expect(r.status, `${type}/${name}: ${JSON.stringify(r.body)}`).toBe(200);
}

/** Changes an agent's definition (its updated_on moves on, like any save). */
export async function updateAgent(app: ApiClient, agent: string, change: Record<string, unknown>): Promise<void> {
  const current = await app.call('GET', `${providers(app, 'Svc.Agent')}/agents/${agent}`);
  await upsert(app, 'Svc.Agent', 'agents', agent, {
    ...(current.body as { resource: Record<string, unknown> }).resource,
    ...change,
  });
}

/** An agent with an embedding model beside its chat model (both on the mock LLM). */
export async function seedKnowledgeAgent(
  app: ApiClient,
  llm: MockLlm,
  agent: string,
  options: Partial<AgentOptions> = {},
): Promise<string> {
  await seedAgent(app, agent, { llmUrl: llm.url, ...options });
  await upsert(app, 'Svc.AIModel', 'aiModels', `${agent}-embedding`, {
    model_type: 'embedding',
    deployment_name: 'text-embedding-3-small',
    api_endpoint_object_id: objectId('Svc.Configuration', 'apiEndpointConfigurations', `${agent}-endpoint`),
    // The chat model's prices go for its embedding model too (input only).
    ...(options.pricing ? { pricing: options.pricing } : {}),
  });
  return objectId('Svc.AIModel', 'aiModels', `${agent}-embedding`);
}

/** A data source, a pipeline into `index`, and a knowledge tool on the agent. */
export async function seedPipeline(
  app: ApiClient,
  agent: string,
  pipeline: string,
  source: Record<string, unknown>,
  paths: string[],
  index: string,
): Promise<void> {
  await upsert(app, 'Svc.DataSource', 'dataSources', `${pipeline}-source`, source);
  await upsert(app, 'Svc.DataPipeline', 'dataPipelines', pipeline, {
    data_source_object_id: objectId('Svc.DataSource', 'dataSources', `${pipeline}-source`),
    source_paths: paths,
    index_name: index,
    embedding_ai_model_object_id: objectId('Svc.AIModel', 'aiModels', `${agent}-embedding`),
    partition_size_tokens: 64,
    partition_overlap_tokens: 16,
  });
  await upsert(app, 'Svc.Agent', 'tools', `${pipeline}-tool`, { tool_type: 'knowledge', index_name: index });
  await updateAgent(app, agent, { tool_object_ids: [objectId('Svc.Agent', 'tools', `${pipeline}-tool`)] });
}

export interface Run {
  name: string;
  status: string;
  counts: {
    documents: number;
    partitions: number;
    failed_documents: number;
    added: number;
    updated: number;
    unchanged: number;
    removed: number;
  };
  usage?: { embedding_tokens: number; cost: number; currency: string | null };
  errors: { source: string; message: string }[];
  started_on: string | null;
  completed_on: string | null;
}

export async function readRun(app: ApiClient, runObjectId: string): Promise<Run> {
  const r = await app.call('GET', `${app.management}${runObjectId}`);
  expect(r.status).toBe(200);
  return (r.body as { resource: Run }).resource;
}

/** Starts a run and waits for its end. */
export async function processPipeline(app: ApiClient, pipeline: string): Promise<Run> {
  const started = await app.call('POST', `${providers(app, 'Svc.DataPipeline')}/dataPipelines/${pipeline}/process`);
  expect(started.status, JSON.stringify(started.body)).toBe(202);
  const runId = (started.body as { object_id: string }).object_id;
  expect(runId).toMatch(
    new RegExp(`^/instances/${INSTANCE}/providers/Svc.DataPipeline/dataPipelineRuns/[0-9a-f-]{36}$`),
  );
  for (const until = Date.now() + 30_000; Date.now() < until; await new Promise((r) => setTimeout(r, 100))) {
    const run = await readRun(app, runId);
    if (run.status === 'Completed' || run.status === 'Failed') return run;
  }
  throw new Error(`run ${runId} did not end`);
}

export interface Answer {
  completion: string;
  citations: Citation[];
  analysis_results: { type: string; similarity?: number }[];
  total_cost: number;
  total_tokens: number;
}

export async function complete(
  app: ApiClient,
  agent: string,
  prompt: string,
  extra: Record<string, unknown> = {},
  as?: string,
): Promise<{ status: number; body: Answer }> {
  const r = await app.call('POST', `${app.core}/instances/${INSTANCE}/completions`, {
    body: { user_prompt: prompt, agent_name: agent, ...extra },
    ...(as ? { as } : {}),
  });
  return { status: r.status, body: r.body as Answer };
}

/** A web server of documents whose set can change between runs. */
export interface DocumentServer {
  url: string;
  files: Map<string, { bytes: Buffer; type: string }>;
  close(): Promise<void>;
}

export async function serveDocuments(): Promise<DocumentServer> {
  const files = new Map<string, { bytes: Buffer; type: string }>();
  const server = http.createServer((req, res) => {
    const file = files.get(req.url ?? '');
    if (!file) res.writeHead(404).end('not found');
    else res.writeHead(200, { 'content-type': file.type, 'content-length': file.bytes.length }).end(file.bytes);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    files,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
