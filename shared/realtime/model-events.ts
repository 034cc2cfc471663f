// What the relay keeps of a realtime model's events: each finished transcript as a message of the session,
// each answer's usage (recorded, counted against the agent's quotas and charged to the budgets, which may
// end the call), and the user's stop words, which end it.
import { randomUUID } from 'node:crypto';
import type { Principal } from '../auth/principal.js';
import type { Budgets } from '../completions/budgets.js';
import type { Quotas } from '../completions/quotas.js';
import { recordUsage, usageRecord } from '../completions/usage.js';
import type { Conversations } from '../conversations/conversations.js';
import { DomainError } from '../errors.js';
import { costOf, pricesOf } from '../models/pricing.js';
import type { DocumentStore } from '../store/types.js';
import type { Call } from './sessions.js';

/** What keeping a call's events uses of the service. */
export interface ModelEventsDeps {
  readonly budgets: Budgets;
  readonly conversations: Conversations;
  readonly quotas: Quotas;
  readonly store: DocumentStore;
}

/** A model's event: a JSON object, of which the relay reads these fields. */
export interface ModelEvent {
  type?: string;
  transcript?: unknown;
  response?: { id?: unknown; usage?: { input_tokens?: unknown; output_tokens?: unknown; total_tokens?: unknown } };
}

/** A model event the relay keeps something of (a quoted name: base64 audio holds no quotes). */
export const KEPT_EVENT = new RegExp(
  '"(?:conversation\\.item\\.input_audio_transcription\\.completed|response\\.(?:output_)?audio_transcript\\.done|' +
    'response\\.(?:created|done)|error)"',
);

/** A model event (a JSON object), or undefined when it is anything else. */
export function parseEvent(text: string): ModelEvent | undefined {
  try {
    const event: unknown = JSON.parse(text);
    return typeof event === 'object' && event !== null && !Array.isArray(event) ? event : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A transcript with its final punctuation (the ideographic full stop and the ellipsis among it, escaped: the
 * Functions bundle is ASCII) and surrounding space gone, for matching stop words.
 */
const spoken = (text: string) =>
  text
    .trim()
    .replace(/[.!?\u3002,;:\u2026]+$/u, '')
    .trim()
    .toLowerCase();

/** The call whose events are kept, and how it ends. */
export interface ObservedCall {
  principal: Principal;
  call: Call;
  /** When the call started (epoch milliseconds). */
  started: number;
  end: (reason: 'stop_word' | 'budget_exceeded', detail: string) => void;
}

/** Keeps what the relay keeps of one model event of a call, stamped `now`. */
export function observer(
  s: ModelEventsDeps,
  { principal, call, started, end }: ObservedCall,
): (event: ModelEvent, now: string) => Promise<void> {
  const { currency } = pricesOf(call.model);
  const message = (sender: 'User' | 'Assistant', text: string, now: string) =>
    s.conversations.recordMessage(call.realtime.upn, call.realtime.session_id, {
      id: randomUUID(),
      sender,
      sender_display_name: sender === 'User' ? (principal.name ?? principal.upn) : call.agent.name,
      text,
      tokens: 0,
      timestamp: now,
      operation_id: `realtime-${call.realtime.id}`,
      agent_name: call.agent.name,
    });
  /** Records an answer's usage and charges it: once a budget of the call is spent, the call ends. */
  const charge = async (response: ModelEvent['response'], now: string) => {
    const usage = response?.usage;
    const input = typeof usage?.input_tokens === 'number' ? usage.input_tokens : 0;
    const output = typeof usage?.output_tokens === 'number' ? usage.output_tokens : 0;
    const id = typeof response?.id === 'string' ? response.id : randomUUID();
    const cost = costOf(call.model, input, output);
    await Promise.all([
      recordUsage(s.store.container('usage'), {
        ...usageRecord(principal, {
          operationId: `realtime-${call.realtime.id}-${id}`,
          sessionId: call.realtime.session_id,
          agentName: call.agent.name,
          deployment: call.model.deployment_name,
          at: now,
          started,
        }),
        protocol: 'realtime',
        ...(call.agent.cost_center ? { cost_center: call.agent.cost_center } : {}),
        ...(currency ? { currency } : {}),
        prompt_tokens: input,
        completion_tokens: output,
        total_tokens: input + output,
        cost,
        status: 'Completed',
      }),
      s.quotas.recordTokens(principal, call.agent.name, input + output),
      s.budgets.charge(principal, call.agent, { currency, cost }),
    ]);
    await s.budgets
      .check(principal, call.agent, () => Promise.resolve(currency))
      .catch((e: unknown) => {
        if (e instanceof DomainError) end('budget_exceeded', e.message);
        else throw e;
      });
  };
  return async (event, now) => {
    const text = typeof event.transcript === 'string' ? event.transcript : '';
    switch (event.type) {
      case 'conversation.item.input_audio_transcription.completed': {
        if (text.trim().length > 0) await message('User', text, now);
        const said = spoken(text);
        if (call.settings.stop_words.some((w) => spoken(w) === said))
          end('stop_word', `The user said a stop word: ${text.trim()}`);
        return;
      }
      case 'response.audio_transcript.done':
      case 'response.output_audio_transcript.done':
        if (text.trim().length > 0) await message('Assistant', text, now);
        return;
      case 'response.done':
        return charge(event.response, now);
      default:
        return;
    }
  };
}
