// The user's sessions: create, rename, delete and page through them.
import { useEffect, useState } from 'preact/hooks';
import { answer } from '../api';
import { Cross, Pencil } from '../icons';
import { page } from '../paging';
import type { Session } from '../schemas';
import { type Context, ErrorText } from '../shell';
export function Sessions({
  ctx,
  current,
  onSelect,
}: {
  ctx: Context;
  current: Session | undefined;
  onSelect: (s: Session | undefined) => void;
}) {
  const [sessions, setSessions] = useState<Session[]>([]);
  const [next, setNext] = useState<string>();
  const [error, setError] = useState<unknown>();
  const load = async (continuation?: string) => {
    const p = await page((query) => ctx.api.core.GET('/sessions', { params: { query } }), continuation);
    setSessions((s) => (continuation ? [...s, ...p.items] : p.items));
    setNext(p.next);
  };
  useEffect(() => void load().catch(setError), [current?.id, current?.name]);
  const create = async () => onSelect(await answer(ctx.api.core.POST('/sessions', { body: { name: 'New Chat' } })));
  const rename = async (s: Session) => {
    const name = prompt('New name of the session', s.name);
    if (!name) return;
    const renamed = await answer(
      ctx.api.core.POST('/sessions/{sessionId}/rename', { params: { path: { sessionId: s.id } }, body: { name } }),
    );
    setSessions((all) => all.map((x) => (x.id === s.id ? renamed : x)));
    if (current?.id === s.id) onSelect(renamed);
  };
  const remove = async (s: Session) => {
    if (!confirm(`Delete “${s.name}” and all its messages?`)) return;
    await ctx.api.core.DELETE('/sessions/{sessionId}', { params: { path: { sessionId: s.id } } });
    setSessions((all) => all.filter((x) => x.id !== s.id));
    if (current?.id === s.id) onSelect(undefined);
  };
  const guard = (f: () => Promise<void>) => () => void f().catch(setError);
  return (
    <section class="sessions" aria-label="Sessions">
      <button onClick={guard(create)}>New chat</button>
      <ErrorText error={error} />
      <ul>
        {sessions.map((s) => (
          <li key={s.id} class={s.id === current?.id ? 'active' : ''}>
            <button
              class="link"
              title={s.name}
              aria-current={s.id === current?.id ? 'true' : undefined}
              onClick={() => onSelect(s)}
            >
              {s.name}
            </button>
            <button class="icon" aria-label={`Rename ${s.name}`} onClick={guard(() => rename(s))}>
              <Pencil />
            </button>
            <button class="icon" aria-label={`Delete ${s.name}`} onClick={guard(() => remove(s))}>
              <Cross />
            </button>
          </li>
        ))}
      </ul>
      {next && <button onClick={guard(() => load(next))}>More sessions</button>}
    </section>
  );
}
