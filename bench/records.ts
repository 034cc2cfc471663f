// Conversation records in `npm run bench -- completions`, against the service as `npm start` runs it (the
// bundle, in its own process, so its CPU time from /proc is its own): what one 30-page PDF attachment adds to
// a completion once its text is kept (against the same completion without it, alternating), and the server
// CPU of a streamed answer with `background: true` (its events kept in the store, batched) against one without.
import http from 'node:http';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { startMockLlm } from '../scripts/mock-llm.js';
import { seed } from './completions.js';
import { paired } from './load.js';
import { cpuMs, startService } from './peers.js';

/** A PDF of `pages` pages of text (about 400 words each). */
async function textPdf(pages: number): Promise<Buffer> {
  const pdf = await PDFDocument.create();
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  for (let p = 0; p < pages; p++) {
    const page = pdf.addPage([612, 792]);
    for (let line = 0; line < 40; line++) {
      const words = Array.from({ length: 10 }, (_, w) => `word${(p * 400 + line * 10 + w) % 997}`).join(' ');
      page.drawText(words, { x: 40, y: 760 - line * 18, size: 11, font });
    }
  }
  return Buffer.from(await pdf.save());
}

/** Reads a streamed answer to its end. */
function streamed(url: string, headers: Record<string, string>, body: string, agent: http.Agent): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers, agent }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () =>
        text.includes('event: completed') ? resolve() : reject(new Error(`no completed event: ${text.slice(0, 200)}`)),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

export interface RecordsBench {
  attachment: { firstMs: number; p50: number; p99: number; added: { p50: number; p99: number } };
  background: { plainCpuMs: number; backgroundCpuMs: number; ratio: number; answers: number };
}

export async function benchRecords(answers = Number(process.env.BENCH_STREAMS ?? 200)): Promise<RecordsBench> {
  const llm = await startMockLlm({ latencyMs: 20 });
  const service = await startService();
  try {
    const auth = { authorization: `Bearer ${service.token}` };
    await seed({ management: service.management, instanceId: service.instanceId, auth }, llm.url);
    const core = `${service.core}/instances/${service.instanceId}`;
    const json = { ...auth, 'content-type': 'application/json' };

    // One 30-page PDF: the first completion extracts its text, later ones read it as kept.
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(await textPdf(30))], { type: 'application/pdf' }), 'report.pdf');
    form.append('agent_name', 'bench');
    const uploaded = (await (
      await fetch(`${core}/files/upload`, { method: 'POST', body: form, headers: auth })
    ).json()) as { object_id: string };
    const withFile = JSON.stringify({
      user_prompt: 'Summarise the report',
      agent_name: 'bench',
      attachments: [uploaded.object_id],
    });
    const t0 = performance.now();
    const first = await fetch(`${core}/completions`, { method: 'POST', headers: json, body: withFile });
    if (first.status !== 200) throw new Error(`attachment completion: ${first.status} ${await first.text()}`);
    const firstMs = performance.now() - t0;
    const plain = {
      url: `${core}/completions`,
      method: 'POST' as const,
      headers: json,
      body: JSON.stringify({ user_prompt: 'Summarise the report', agent_name: 'bench' }),
    };
    await paired(plain, { ...plain, body: withFile }, 50);
    const attached = await paired(plain, { ...plain, body: withFile }, 300);

    // Streamed answers of 100 pieces over a second, 8 at a time, in alternating blocks: server CPU per answer.
    llm.setStreaming(10, 1000);
    const headers = { ...json, accept: 'text/event-stream' };
    const prompt = Array.from({ length: 98 }, (_, i) => `piece${i}`).join(' ');
    const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
    const run = async (background: boolean, count: number) => {
      const body = JSON.stringify({
        user_prompt: prompt,
        agent_name: 'bench',
        ...(background ? { background: true } : {}),
      });
      const before = cpuMs(service.process.pid!);
      for (let i = 0; i < count; i += 8)
        await Promise.all(
          Array.from({ length: Math.min(8, count - i) }, () => streamed(`${core}/completions`, headers, body, agent)),
        );
      return cpuMs(service.process.pid!) - before;
    };
    await run(false, 24);
    await run(true, 24);
    const spent = { plain: 0, background: 0 };
    const block = 40;
    for (let done = 0; done < answers; done += block) {
      spent.plain += await run(false, block);
      spent.background += await run(true, block);
    }
    agent.destroy();
    const total = Math.ceil(answers / block) * block;
    return {
      attachment: { firstMs: Math.round(firstMs), p50: attached.b.p50, p99: attached.b.p99, added: attached.added },
      background: {
        plainCpuMs: spent.plain / total,
        backgroundCpuMs: spent.background / total,
        ratio: spent.background / spent.plain,
        answers: total,
      },
    };
  } finally {
    service.process.kill('SIGTERM');
    await new Promise((r) => service.process.once('exit', r));
    await llm.close();
  }
}
