// What a client's events may do in a call: the agent's instructions, prompt, model and tools are locked (an
// event that would change them is refused), text the client types for the model passes the agent's
// pre-completion shields, and an answer is asked for one at a time while the call's budgets have room.
import type { Principal } from '../auth/principal.js';
import type { Budgets } from '../completions/budgets.js';
import { DomainError } from '../errors.js';
import { pricesOf } from '../models/pricing.js';
import { effectiveShielding } from '../providers/types/agent-settings.js';
import { screen, type ShieldingPluginsDeps } from '../shielding/plugins.js';
import type { Call } from './sessions.js';

/** A client's event: a JSON object, of which the relay reads these fields. */
export interface ClientEvent {
  type?: unknown;
  event_id?: unknown;
  session?: unknown;
  response?: unknown;
  item?: unknown;
}

/** Why a client event does not go to the model, as its error event says. */
export interface Refusal {
  code: string;
  message: string;
}

/** Session and response fields a client may not set: the service's instructions, prompt, model and tools stand. */
const LOCKED = ['instructions', 'prompt', 'model', 'tools', 'tool_choice'];
/** Roles of items that instruct the model: only the service's instructions do. */
const INSTRUCTING = new Set(['system', 'developer']);
/** Fields of a client's items that carry no words: ids, kinds, and base64 audio. */
const WORDLESS = new Set([
  'audio',
  'type',
  'role',
  'id',
  'event_id',
  'call_id',
  'item_id',
  'previous_item_id',
  'status',
  'object',
  'format',
]);

/** The input items of a response's settings, if it names any. */
const inputOf = (settings: unknown): unknown =>
  typeof settings === 'object' && settings !== null && 'input' in settings ? settings.input : undefined;

/** An item that would speak to the model as its instructions (role system or developer). */
const instructs = (item: unknown) =>
  typeof item === 'object' && item !== null && 'role' in item && INSTRUCTING.has(String(item.role));

/**
 * The text a client puts in an event for the model to read, to screen: every string of a created item or of a
 * response's input items (their text, transcripts, function outputs and arguments), however nested.
 */
export function typedText(event: ClientEvent): string {
  const items =
    event.type === 'conversation.item.create'
      ? [event.item]
      : event.type === 'response.create'
        ? [inputOf(event.response)]
        : [];
  const texts: string[] = [];
  const stack: unknown[] = [...items];
  while (stack.length > 0) {
    const value: unknown = stack.pop();
    if (typeof value === 'string') texts.push(value);
    else if (Array.isArray(value)) for (const inner of value) stack.push(inner);
    else if (typeof value === 'object' && value !== null)
      for (const [key, inner] of Object.entries(value)) if (!WORDLESS.has(key)) stack.push(inner);
  }
  return texts.reverse().join('\n\n');
}

/**
 * What a client event would change that it may not, or undefined when it may be passed on: the session's
 * or one response's instructions, prompt, model and tools, and items that speak as the system.
 */
export function refused(event: ClientEvent): string | undefined {
  const settings =
    event.type === 'session.update' ? event.session : event.type === 'response.create' ? event.response : undefined;
  if (settings && typeof settings === 'object') {
    const locked = LOCKED.filter((k) => k in settings);
    if (locked.length > 0) return `the agent's ${locked.join(', ')} cannot be changed in a call`;
    const input = inputOf(settings);
    if (Array.isArray(input) && input.some(instructs)) return "the agent's instructions cannot be changed in a call";
  }
  if (event.type === 'conversation.item.create' && instructs(event.item))
    return "the agent's instructions cannot be changed in a call";
  return undefined;
}

/** What admitting a call's events uses of the service. */
export interface AdmissionDeps extends ShieldingPluginsDeps {
  readonly budgets: Budgets;
}

/** The call whose events are admitted, and what the relay knows of its answers. */
export interface AdmissionOf {
  principal: Principal;
  call: Call;
  /** Whether an answer was asked for or is under way. */
  answering: () => boolean;
  /** Ends the call: a budget of it is spent. */
  spent: (message: string) => void;
}

/**
 * The check an event waits for before it goes to the model, if any: typed text passes the agent's
 * pre-completion shields; an answer is asked for only while none is under way (one at a time, so what a
 * call spends is charged answer by answer) and while the call's budgets have room.
 */
export function admission(
  s: AdmissionDeps,
  { principal, call, answering, spent }: AdmissionOf,
): (event: ClientEvent) => (() => Promise<Refusal | undefined>) | undefined {
  const shields = effectiveShielding(call.agent).pre;
  const { currency } = pricesOf(call.model);
  return (event) => {
    const typed = shields.length > 0 ? typedText(event) : '';
    if (event.type !== 'response.create' && typed === '') return undefined;
    return async () => {
      if (event.type === 'response.create') {
        if (answering())
          return {
            code: 'response_in_progress',
            message: 'An answer is under way: ask for the next one when it is done',
          };
        const exceeded = await s.budgets
          .check(principal, call.agent, () => Promise.resolve(currency))
          .then(
            () => undefined,
            (e: unknown) => {
              if (e instanceof DomainError) return e.message;
              throw e;
            },
          );
        if (exceeded !== undefined) {
          spent(exceeded);
          return { code: 'budget_exceeded', message: exceeded };
        }
      }
      const block = typed === '' ? undefined : await screen(s, { plugins: shields, stage: 'pre', text: typed });
      return block
        ? { code: 'blocked_by_shield', message: `Refused by ${block.plugin_name}: ${block.reason}` }
        : undefined;
    };
  };
}
