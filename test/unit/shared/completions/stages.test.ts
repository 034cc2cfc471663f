// The stages of a completion in process, each on its own: admission (agent, access, attachments), the
// configuration chain, the messages the model is sent, the model parameters, the prompt rewrite, and what
// is recorded. The model is the mock OpenAI-compatible server; the store is in memory.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockLlm, textOf, type MockLlm } from '../../../../scripts/mock-llm.js';
import { runCompletion } from '../../../../shared/completions/completion.js';
import type { CompletionRequest } from '../../../../shared/completions/completion-request.js';
import { admit } from '../../../../shared/completions/admit-request.js';
import { rewritePrompt } from '../../../../shared/completions/rewrite.js';
import { agents, type AgentDoc } from '../../../../shared/providers/types/agent.js';
import { aiModels, apiEndpointConfigurations, prompts, workflows } from '../../../../shared/providers/types/catalog.js';
import { objectIdOf, type ResourceKind } from '../../../../shared/providers/types/resource-type.js';
import { OWNER, put, user } from '../../../support/resources.js';
import { testServices, type TestServices } from '../../../support/services.js';

const request = (r: Partial<CompletionRequest> & { user_prompt: string }): CompletionRequest => ({ ...r });

describe('the stages of a completion', () => {
  let s: TestServices;
  let llm: MockLlm;
  const id = (kind: ResourceKind, name: string) => objectIdOf(s.config.instanceId, kind, name);

  beforeAll(async () => {
    llm = await startMockLlm();
    s = await testServices({ env: { ALLOW_PRIVATE_NETWORK: 'true' } });
    await put(s, apiEndpointConfigurations, 'mock', {
      provider: 'openai',
      url: `${llm.url}/v1`,
      authentication_type: 'None',
    });
    await put(s, aiModels, 'chat', {
      model_type: 'completion',
      deployment_name: 'chat',
      api_endpoint_object_id: id(apiEndpointConfigurations, 'mock'),
      model_parameters: { temperature: 0.2, seed: 7 },
      pricing: { input_per_million: 1000, output_per_million: 0, currency: 'USD' },
    });
    await put(s, prompts, 'terse', { prefix: 'Be terse.', suffix: 'Answer in one line.' });
    await put(s, workflows, 'chat', {
      workflow_type: 'chat',
      workflow_host: 'builtin',
      main_ai_model_object_id: id(aiModels, 'chat'),
      main_prompt_object_id: id(prompts, 'terse'),
    });
    // Saving checks what a link names only when it exists: the model is made an embedding model afterwards.
    await put(s, workflows, 'wrong-model', {
      workflow_type: 'chat',
      workflow_host: 'builtin',
      main_ai_model_object_id: id(aiModels, 'later'),
      main_prompt_object_id: id(prompts, 'terse'),
    });
    await put(s, aiModels, 'later', {
      model_type: 'embedding',
      deployment_name: 'later',
      api_endpoint_object_id: id(apiEndpointConfigurations, 'mock'),
    });
    await put(s, workflows, 'no-prompt', {
      workflow_type: 'chat',
      workflow_host: 'builtin',
      main_ai_model_object_id: id(aiModels, 'chat'),
      main_prompt_object_id: id(prompts, 'gone'),
    });
    await put(s, agents, 'helper', {
      workflow_object_id: id(workflows, 'chat'),
      conversation_history_settings: { enabled: true, max_history: 2 },
    });
  });
  afterAll(async () => {
    await s.close();
    await llm.close();
  });

  const answer = async (prompt: string, extra: Partial<CompletionRequest> = {}, who = OWNER) => {
    const admitted = await admit(s, who, request({ user_prompt: prompt, agent_name: 'helper', ...extra }));
    return runCompletion(s, who, admitted, {
      operationId: `op-${Math.random().toString(36).slice(2)}`,
      mayRepeat: false,
    });
  };

  describe('admission', () => {
    it('names agent_name for an agent that does not exist; answers 403 for one the caller may not use', async () => {
      await expect(admit(s, OWNER, request({ user_prompt: 'hi', agent_name: 'nobody' }))).rejects.toMatchObject({
        kind: 'invalid',
        details: [{ field: 'agent_name' }],
      });
      await expect(
        admit(s, user('stranger@example.com'), request({ user_prompt: 'hi', agent_name: 'helper' })),
      ).rejects.toMatchObject({ kind: 'forbidden' });
    });

    it(
      "takes the caller's only usable agent when none is named, and refuses an attachment that is not the " +
        "caller's",
      async () => {
        expect((await admit(s, OWNER, request({ user_prompt: 'hi' }))).agent.name).toBe('helper');
        await expect(
          admit(s, OWNER, request({ user_prompt: 'hi', attachments: ['/files/not-mine'] })),
        ).rejects.toMatchObject({ kind: 'invalid', details: [{ field: 'attachments' }] });
      },
    );
  });

  describe('the chain and the model call', () => {
    it(
      "sends the prompt's prefix as the system message and its suffix after the user prompt, with the model's " +
        "parameters and the request's overrides",
      async () => {
        const before = llm.requests.length;
        const done = await answer('What is 2+2?', { settings: { model_parameters: { temperature: 0.9 } } });
        const sent = llm.requests[before]?.body;
        expect(sent?.messages).toEqual([
          { role: 'system', content: 'Be terse.' },
          { role: 'user', content: 'What is 2+2?\n\nAnswer in one line.' },
        ]);
        expect(sent).toMatchObject({ model: 'chat', temperature: 0.9, seed: 7 });
        expect(done.completion).toContain('What is 2+2?');
        // The model's price counts: 1 per 1,000 prompt tokens.
        expect(done.total_cost).toBeCloseTo(done.prompt_tokens / 1000, 6);
      },
    );

    it('sends the last max_history turns of the session before the prompt', async () => {
      const session = await s.conversations.create(OWNER.upn, 'history');
      for (const q of ['one', 'two', 'three']) await answer(q, { session_id: session.id });
      const before = llm.requests.length;
      await answer('four', { session_id: session.id });
      const contents = llm.requests[before]?.body.messages.map((m) => `${m.role}:${textOf(m.content)}`);
      // Two turns (four messages) of history: the second and third question with their answers.
      expect(contents?.slice(1, 5).map((c) => c.split(':')[0])).toEqual(['user', 'assistant', 'user', 'assistant']);
      expect(contents?.[1]).toBe('user:two');
      expect(contents?.[3]).toBe('user:three');
    });

    it(
      'refuses an agent whose workflow names an embedding model, or a prompt that does not exist, naming what ' +
        'is wrong',
      async () => {
        await put(s, agents, 'wrong', { workflow_object_id: id(workflows, 'wrong-model') });
        await put(s, agents, 'promptless', { workflow_object_id: id(workflows, 'no-prompt') });
        await expect(answer('hi', { agent_name: 'wrong' })).rejects.toMatchObject({
          kind: 'invalid',
          message: expect.stringContaining('not a completion model') as string,
        });
        await expect(answer('hi', { agent_name: 'promptless' })).rejects.toMatchObject({
          kind: 'invalid',
          message: expect.stringContaining('its prompt is missing') as string,
        });
      },
    );
  });

  describe('the prompt rewrite', () => {
    it(
      "asks the rewrite model with the rewrite prompt and the session's earlier user prompts, and answers the " +
        'rewritten prompt',
      async () => {
        await put(s, prompts, 'rewriter', { prefix: 'Rewrite the question to stand alone.' });
        const rewriting: AgentDoc | undefined = await s.resourceCache.get(
          await put(s, agents, 'rewriting', {
            workflow_object_id: id(workflows, 'chat'),
            text_rewrite_settings: {
              user_prompt_rewrite_enabled: true,
              user_prompt_rewrite_settings: {
                user_prompt_rewrite_ai_model_object_id: id(aiModels, 'chat'),
                user_prompt_rewrite_prompt_object_id: id(prompts, 'rewriter'),
                user_prompts_window_size: 1,
              },
            },
          }),
          agents,
        );
        if (!rewriting) throw new Error('the agent was not saved');
        const session = await s.conversations.create(OWNER.upn, 'rewrite');
        await answer('Tell me about penguins.', { session_id: session.id });
        const before = llm.requests.length;
        const rewritten = await rewritePrompt(s, {
          principal: OWNER,
          agent: rewriting,
          session: await s.conversations.get(OWNER.upn, session.id),
          prompt: 'Where do they sleep?',
        });
        expect(llm.requests[before]?.body.messages).toEqual([
          { role: 'system', content: 'Rewrite the question to stand alone.' },
          { role: 'user', content: 'Tell me about penguins.' },
          { role: 'user', content: 'Where do they sleep?' },
        ]);
        expect(rewritten?.prompt).toContain('Where do they sleep?');
        expect(rewritten?.promptTokens).toBeGreaterThan(0);
      },
    );

    it('does nothing for an agent without a rewrite', async () => {
      const helper = await s.resourceCache.get(id(agents, 'helper'), agents);
      if (!helper) throw new Error('no helper');
      expect(
        await rewritePrompt(s, { principal: OWNER, agent: helper, session: undefined, prompt: 'hello' }),
      ).toBeUndefined();
    });
  });

  it('records the turn: both messages in the session, with their token counts', async () => {
    const session = await s.conversations.create(OWNER.upn, 'recorded');
    const done = await answer('Remember this.', { session_id: session.id });
    const messages = await s.conversations.recentHistory(await s.conversations.get(OWNER.upn, session.id), 10);
    expect(messages.map((m) => m.sender)).toEqual(['User', 'Assistant']);
    expect(messages[1]?.text).toBe(done.completion);
  });
});
