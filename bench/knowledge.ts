// Knowledge on the embedded index: ingestion of 10,000 partitions through a real pipeline run
// (a Web source on loopback, the mock's embeddings), retrieval of the top 5 at concurrency 1, and what
// retrieval adds to a completion. Each against a baseline of the same run: fetching and embedding the same
// text without the service; an exact cosine scan of the same vectors in the same SQLite file (which also
// gives the quantized search's recall); the same completion from an agent without knowledge.
import http from 'node:http';
import Database from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { mockEmbedding, startMockLlm } from '../scripts/mock-llm.js';
import { freePort, startAzurite } from '../scripts/azurite.js';
import { runPipeline } from '../shared/knowledge/runs.js';
import { startBenchApp } from './app.js';
import { paired } from './load.js';

/** text-embedding-3-small's length, which the Cosmos adapter's container also fixes. */
const DIMENSIONS = 1536;
const DOCUMENTS = 200;
/** Partition size and overlap that give 50 partitions per document: 10,000 in all. */
const SIZE_TOKENS = 100;
const OVERLAP_TOKENS = 20;
const UPSTREAM_LATENCY_MS = 20;

const VOCABULARY = Array.from({ length: 5000 }, (_, i) => `term${i.toString(36)}`);
const randomWords = (n: number) =>
  Array.from({ length: n }, () => VOCABULARY[Math.floor(Math.random() * VOCABULARY.length)]).join(' ');

const pct = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * p))] ?? 0;
const round = (ms: number) => Math.round(ms * 100) / 100;

export interface KnowledgeBench {
  partitions: number;
  ingestion: { seconds: number; perSecond: number; baselinePerSecond: number };
  retrieval: {
    p50: number;
    p99: number;
    baselineP50: number;
    baselineP99: number;
    recall: { atFive: number; best: number };
  };
  completion: {
    without: { p50: number; p99: number };
    with: { p50: number; p99: number };
    added: { p50: number; p99: number };
  };
}

export async function benchKnowledge(): Promise<KnowledgeBench> {
  const azurite = await startAzurite({ blobPort: await freePort(), queuePort: await freePort() });
  const llm = await startMockLlm({ latencyMs: UPSTREAM_LATENCY_MS });
  // Each document: about 4,000 tokens (three per word), so 50 partitions of 100 tokens stepping 80.
  const documents = Array.from({ length: DOCUMENTS }, () => randomWords(1333));
  const web = http.createServer((req, res) => {
    const n = Number(/^\/doc-(\d+)\.txt$/.exec(req.url ?? '')?.[1] ?? -1);
    const text = documents[n];
    if (text === undefined) res.writeHead(404).end();
    else res.writeHead(200, { 'content-type': 'text/plain' }).end(text);
  });
  await new Promise<void>((r) => web.listen(0, '127.0.0.1', r));
  const webUrl = `http://127.0.0.1:${(web.address() as AddressInfo).port}`;
  const app = await startBenchApp('embedded', {
    ALLOW_PRIVATE_NETWORK: 'true',
    AzureWebJobsStorage: azurite.connectionString,
  });
  try {
    const p = (provider: string, type: string, name: string) =>
      `/instances/${app.instanceId}/providers/${provider}/${type}/${name}`;
    const post = async (path: string, body: Record<string, unknown>, status = 200) => {
      const r = await fetch(`${app.management}${path}`, {
        method: 'POST',
        headers: { ...app.auth, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      if (r.status !== status) throw new Error(`${path}: ${r.status} ${await r.text()}`);
      return (await r.json()) as { object_id: string };
    };
    await post(p('Svc.Configuration', 'apiEndpointConfigurations', 'e'), {
      name: 'e',
      provider: 'openai',
      url: `${llm.url}/v1`,
      authentication_type: 'None',
    });
    await post(p('Svc.AIModel', 'aiModels', 'm'), {
      name: 'm',
      model_type: 'completion',
      deployment_name: 'bench',
      api_endpoint_object_id: p('Svc.Configuration', 'apiEndpointConfigurations', 'e'),
    });
    await post(p('Svc.AIModel', 'aiModels', 'embed'), {
      name: 'embed',
      model_type: 'embedding',
      deployment_name: 'text-embedding-3-small',
      api_endpoint_object_id: p('Svc.Configuration', 'apiEndpointConfigurations', 'e'),
    });
    await post(p('Svc.Prompt', 'prompts', 'p'), { name: 'p', prefix: 'You are a benchmark.' });
    await post(p('Svc.Agent', 'workflows', 'w'), {
      name: 'w',
      workflow_type: 'chat',
      workflow_host: 'builtin',
      main_ai_model_object_id: p('Svc.AIModel', 'aiModels', 'm'),
      main_prompt_object_id: p('Svc.Prompt', 'prompts', 'p'),
    });
    await post(p('Svc.DataSource', 'dataSources', 'web'), {
      name: 'web',
      data_source_type: 'Web',
      urls: [`${webUrl}/`],
    });
    await post(p('Svc.DataPipeline', 'dataPipelines', 'docs'), {
      name: 'docs',
      data_source_object_id: p('Svc.DataSource', 'dataSources', 'web'),
      source_paths: documents.map((_, i) => `${webUrl}/doc-${i}.txt`),
      index_name: 'bench-docs',
      embedding_ai_model_object_id: p('Svc.AIModel', 'aiModels', 'embed'),
      embedding_dimensions: DIMENSIONS,
      partition_size_tokens: SIZE_TOKENS,
      partition_overlap_tokens: OVERLAP_TOKENS,
    });
    await post(p('Svc.Agent', 'tools', 'kb'), { name: 'kb', tool_type: 'knowledge', index_name: 'bench-docs' });
    await post(p('Svc.Agent', 'agents', 'plain'), {
      name: 'plain',
      workflow_object_id: p('Svc.Agent', 'workflows', 'w'),
    });
    await post(p('Svc.Agent', 'agents', 'knowing'), {
      name: 'knowing',
      workflow_object_id: p('Svc.Agent', 'workflows', 'w'),
      tool_object_ids: [p('Svc.Agent', 'tools', 'kb')],
    });

    // Ingestion: the run as the queue worker does it, timed from the process call to the end.
    const started = performance.now();
    const { object_id } = await post(`${p('Svc.DataPipeline', 'dataPipelines', 'docs')}/process`, {}, 202);
    await runPipeline({ run: object_id.split('/').pop() ?? '' }, { id: 'bench', dequeueCount: 1 }, app.services);
    const seconds = (performance.now() - started) / 1000;
    const partitions = (await app.services.vectors.documents('bench-docs')).reduce((n, d) => n + d.partitions, 0);
    if (partitions < 9_900) throw new Error(`the run indexed ${partitions} partitions, not about 10,000`);

    // Its baseline: fetching the same documents and embedding the same number of inputs, 64 at a time.
    const baselineStarted = performance.now();
    for (let i = 0; i < DOCUMENTS; i++) await (await fetch(`${webUrl}/doc-${i}.txt`)).text();
    const inputs = Array.from({ length: 64 }, () => randomWords(80));
    for (let done = 0; done < partitions; done += 64) {
      const r = await fetch(`${llm.url}/v1/embeddings`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'x', input: inputs, dimensions: DIMENSIONS }),
      });
      await r.json();
    }
    const baselinePerSecond = partitions / ((performance.now() - baselineStarted) / 1000);

    // Retrieval: top 5 of 10,000, one at a time, for prompts as users ask them: a dozen words of one passage.
    const passage = () => {
      const words = (documents[Math.floor(Math.random() * DOCUMENTS)] ?? '').split(' ');
      const at = Math.floor(Math.random() * (words.length - 12));
      return words.slice(at, at + 12).join(' ');
    };
    const queries = Array.from({ length: 300 }, () => mockEmbedding(passage(), DIMENSIONS));
    for (const q of queries.slice(0, 20)) await app.services.vectors.search('bench-docs', q, 5);
    const times: number[] = [];
    for (const q of queries) {
      const t = performance.now();
      await app.services.vectors.search('bench-docs', q, 5);
      times.push(performance.now() - t);
    }
    // Its baseline: an exact cosine scan of every vector of the index, in the same file; and the recall of the
    // quantized search against it.
    const db = new Database(app.services.config.knowledge.file, { readonly: true });
    sqliteVec.load(db);
    db.pragma('mmap_size = 1073741824');
    const exact = db.prepare(
      `SELECT source, part FROM vectors_${DIMENSIONS} WHERE index_name = 'bench-docs' ORDER BY ` +
        `vec_distance_cosine(embedding, ?) LIMIT 5`,
    );
    const scanTimes: number[] = [];
    let found = 0;
    let firstFound = 0;
    for (const q of queries.slice(0, 100)) {
      const blob = Buffer.from(Float32Array.from(q).buffer);
      const t = performance.now();
      const truth = exact.all(blob) as { source: string; part: number }[];
      scanTimes.push(performance.now() - t);
      const got = new Set(
        (await app.services.vectors.search('bench-docs', q, 5)).map((h) => `${h.id.split('-').pop() ?? ''}${h.source}`),
      );
      found += truth.filter((r) => got.has(`${r.part}${r.source}`)).length;
      if (truth[0] && got.has(`${truth[0].part}${truth[0].source}`)) firstFound++;
    }
    db.close();
    const recall = { atFive: found / 500, best: firstFound / 100 };

    // A completion with retrieval against the same without, alternating.
    const json = { ...app.auth, 'content-type': 'application/json' };
    const url = `${app.core}/instances/${app.instanceId}/completions`;
    const prompt = randomWords(12);
    const without = {
      url,
      method: 'POST' as const,
      headers: json,
      body: JSON.stringify({ user_prompt: prompt, agent_name: 'plain' }),
    };
    const withKnowledge = {
      url,
      method: 'POST' as const,
      headers: json,
      body: JSON.stringify({ user_prompt: prompt, agent_name: 'knowing' }),
    };
    await paired(without, withKnowledge, 20);
    const c = await paired(without, withKnowledge, 200);

    return {
      partitions,
      ingestion: {
        seconds: round(seconds),
        perSecond: Math.round(partitions / seconds),
        baselinePerSecond: Math.round(baselinePerSecond),
      },
      retrieval: {
        p50: round(pct(times, 0.5)),
        p99: round(pct(times, 0.99)),
        baselineP50: round(pct(scanTimes, 0.5)),
        baselineP99: round(pct(scanTimes, 0.99)),
        recall,
      },
      completion: { without: { p50: c.a.p50, p99: c.a.p99 }, with: { p50: c.b.p50, p99: c.b.p99 }, added: c.added },
    };
  } finally {
    await app.close();
    web.close();
    await llm.close();
    await azurite.stop();
  }
}
