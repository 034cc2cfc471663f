// Finding 5 of the second hardening round, against the bundle: a document that was being read when the
// process died is not read again by the redelivered run (a document that crashed a process must not crash
// it again). The first process is killed while it reads a page that never ends; a second one, on the same
// data and queues, takes the run's message back, skips that document naming why, and finishes the run.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockLlm, type MockLlm } from '../../../scripts/mock-llm.js';
import { providers } from '../../support/app.js';
import { startBundledApp, type BundledApp } from '../../support/bundled-app.js';
import { htmlOf } from '../../support/documents.js';
import { objectId, readRun, seedKnowledgeAgent, upsert } from '../knowledge/support.js';

describe('a document that was being read when the process died', () => {
  let llm: MockLlm;
  let docs: http.Server;
  let docsUrl: string;
  const asked: string[] = [];

  beforeAll(async () => {
    llm = await startMockLlm();
    docs = http.createServer((req, res) => {
      asked.push(req.url ?? '');
      if (req.url === '/endless.html') {
        // Holds the reader until the process is killed.
        res.writeHead(200, { 'content-type': 'text/html' });
        const timer = setInterval(() => res.write('<p>more</p>'), 200);
        res.on('close', () => clearInterval(timer));
        return;
      }
      res
        .writeHead(200, { 'content-type': 'text/html' })
        .end(htmlOf('Fine', 'An ordinary page about lighthouses on rocky coasts.'));
    });
    await new Promise<void>((resolve) => docs.listen(0, '127.0.0.1', resolve));
    docsUrl = `http://127.0.0.1:${(docs.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await llm.close();
    docs.closeAllConnections();
    await new Promise<void>((resolve) => docs.close(() => resolve()));
  });

  it('5: is skipped, named, by the redelivered run instead of being read again', async () => {
    let first: BundledApp | undefined = await startBundledApp({
      ALLOW_PRIVATE_NETWORK: 'true',
      QUEUE_VISIBILITY_TIMEOUT_SECONDS: '3',
    });
    let second: BundledApp | undefined;
    try {
      await seedKnowledgeAgent(first, llm, 'survivor');
      await upsert(first, 'Svc.DataSource', 'dataSources', 'crashy', {
        data_source_type: 'Web',
        urls: [`${docsUrl}/`],
      });
      await upsert(first, 'Svc.DataPipeline', 'dataPipelines', 'crashy', {
        data_source_object_id: objectId('Svc.DataSource', 'dataSources', 'crashy'),
        source_paths: [`${docsUrl}/endless.html`, `${docsUrl}/fine.html`],
        index_name: 'crashy',
        embedding_ai_model_object_id: objectId('Svc.AIModel', 'aiModels', 'survivor-embedding'),
      });
      const started = await first.call('POST', `${providers(first, 'Svc.DataPipeline')}/dataPipelines/crashy/process`);
      expect(started.status).toBe(202);
      const runId = (started.body as { object_id: string }).object_id;
      // Killed once the endless page is the only document being read (the other one is done).
      const endless = `${docsUrl}/endless.html`;
      const readingOnly = async () =>
        JSON.stringify(((await readRun(first as BundledApp, runId)) as { reading?: string[] }).reading) ===
        JSON.stringify([endless]);
      for (const end = Date.now() + 20_000; !(await readingOnly()); await new Promise((r) => setTimeout(r, 50))) {
        if (Date.now() > end) throw new Error('the endless page was never the only document being read');
      }
      // The process dies while reading it (as an out-of-memory crash would).
      const env = first.env;
      first.process.child.kill('SIGKILL');
      await new Promise((r) => first?.process.child.once('exit', r));
      first = undefined;
      const askedBefore = asked.filter((u) => u === '/endless.html').length;

      second = await startBundledApp(env);
      let run = await readRun(second, runId);
      for (
        const end = Date.now() + 40_000;
        run.status !== 'Completed' && run.status !== 'Failed';
        run = await readRun(second, runId)
      ) {
        if (Date.now() > end) throw new Error(`run still ${run.status}`);
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(run.status).toBe('Completed');
      expect(run.errors).toEqual([
        { source: endless, message: 'skipped: the service stopped while reading this document in an earlier attempt' },
      ]);
      expect(run.counts).toMatchObject({ documents: 2, failed_documents: 1 });
      expect(asked.filter((u) => u === '/endless.html').length).toBe(askedBefore);
    } finally {
      await first?.stop();
      await second?.stop();
    }
  }, 90_000);
});
