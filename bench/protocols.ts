// What the protocol facades add over a Core completion: the same prompt to the same agent (no session),
// alternating at concurrency 1 against a mock model that answers at once, through POST /completions and
// through the OpenAI facade's Chat Completions; then Responses, the MCP tool call and A2A message/send, each
// against the Core completion too (those three keep an operation, or build an MCP server, per call).
import { startMockLlm } from '../scripts/mock-llm.js';
import type { BenchApp } from './app.js';
import { seed } from './completions.js';
import { paired, type PairedResult } from './load.js';

export interface ProtocolBench {
  facade: string;
  result: PairedResult;
}

export async function benchProtocols(app: BenchApp, count = 2000): Promise<ProtocolBench[]> {
  const llm = await startMockLlm();
  await seed(app, llm.url);
  const base = `${app.core}/instances/${app.instanceId}`;
  const json = { ...app.auth, 'content-type': 'application/json' };
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) => ({
    url: `${base}${path}`,
    method: 'POST' as const,
    headers: { ...json, ...headers },
    body: JSON.stringify(body),
  });
  const prompt = 'How much does the facade add, with a few more words?';
  const core = post('/completions', { user_prompt: prompt, agent_name: 'bench' });
  const facades = [
    [
      'OpenAI Chat Completions',
      post('/openai/v1/chat/completions', { model: 'bench', messages: [{ role: 'user', content: prompt }] }),
    ],
    [
      'OpenAI Responses (a stored response, a new session each)',
      post('/openai/v1/responses', { model: 'bench', input: prompt }),
    ],
    [
      'MCP tools/call',
      post(
        '/mcp/agents',
        { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'bench', arguments: { prompt } } },
        { accept: 'application/json, text/event-stream' },
      ),
    ],
    [
      'A2A message/send (a task, a new session each)',
      post('/a2a/bench', {
        jsonrpc: '2.0',
        id: 1,
        method: 'message/send',
        params: { message: { kind: 'message', role: 'user', messageId: 'm', parts: [{ kind: 'text', text: prompt }] } },
      }),
    ],
  ] as const;
  const results: ProtocolBench[] = [];
  for (const [facade, request] of facades) {
    await paired(core, request, 200);
    // Chat Completions is the target; the others are measured with fewer calls.
    results.push({
      facade,
      result: await paired(core, request, facade.startsWith('OpenAI Chat') ? count : Math.ceil(count / 4)),
    });
  }
  await llm.close();
  return results;
}
