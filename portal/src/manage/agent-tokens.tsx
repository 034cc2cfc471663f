// An agent's access tokens: the secret is shown once, when it is made.
import { useEffect, useState } from 'preact/hooks';
import { answer } from '../api';
import { all } from '../paging';
import type { AgentAccessToken } from '../schemas';
import { type Context, ErrorText, submitTo } from '../shell';

const TOKENS = '/providers/Svc.Agent/agents/{agentName}/agent-access-tokens';

/** Agent access tokens: the secret is shown once, when it is made. */
export function AgentTokens({ ctx, agent }: { ctx: Context; agent: string }) {
  const [tokens, setTokens] = useState<AgentAccessToken[]>([]);
  const [name, setName] = useState('');
  const [secret, setSecret] = useState<string>();
  const [error, setError] = useState<unknown>();
  const load = () =>
    all((query) => ctx.api.management.GET(TOKENS, { params: { path: { agentName: agent }, query } })).then(
      (l) => setTokens(l.map((t) => t.resource)),
      setError,
    );
  /** Deactivates an active token and activates an inactive one, then lists them again. */
  const toggle = (t: AgentAccessToken) => {
    const path = { agentName: agent, tokenId: t.id };
    const call = t.active
      ? ctx.api.management.POST(`${TOKENS}/{tokenId}/deactivate`, { params: { path } })
      : ctx.api.management.POST(`${TOKENS}/{tokenId}/activate`, { params: { path } });
    void call.then(load, setError);
  };
  const revoke = (t: AgentAccessToken) =>
    void ctx.api.management
      .DELETE(`${TOKENS}/{tokenId}`, { params: { path: { agentName: agent, tokenId: t.id } } })
      .then(load, setError);
  useEffect(() => void load(), [agent]);
  const create = async () => {
    const r = await answer(
      ctx.api.management.POST(TOKENS, {
        params: { path: { agentName: agent } },
        body: { type: 'agent-access-token', name },
      }),
    );
    setSecret(r.resource);
    setName('');
    await load();
  };
  return (
    <section aria-label="Access tokens">
      <h3>Access tokens</h3>
      {secret && (
        <div class="secret" role="status">
          <p>The new token, shown this once: copy it now.</p>
          <code class="token-secret">{secret}</code>
          <button class="link" onClick={() => setSecret(undefined)}>
            Done
          </button>
        </div>
      )}
      <ul>
        {tokens.map((t) => (
          <li key={t.id}>
            {t.name} {!t.active && <span class="muted">(deactivated)</span>}{' '}
            {t.expiration_date && <span class="muted">expires {t.expiration_date}</span>}{' '}
            <span class="muted">
              {t.last_used_on ? `last used ${t.last_used_on.slice(0, 16).replace('T', ' ')} UTC` : 'never used'}
            </span>{' '}
            <button
              class="link"
              aria-label={`${t.active ? 'Deactivate' : 'Activate'} ${t.name}`}
              onClick={() => toggle(t)}
            >
              {t.active ? 'Deactivate' : 'Activate'}
            </button>{' '}
            <button class="link" aria-label={`Revoke ${t.name}`} onClick={() => revoke(t)}>
              Revoke
            </button>
          </li>
        ))}
      </ul>
      <form class="row" onSubmit={submitTo(create, setError)}>
        <label for="token-name">Token name</label>
        <input id="token-name" value={name} onInput={(e) => setName(e.currentTarget.value)} required />
        <button type="submit">Issue token</button>
      </form>
      <ErrorText error={error} />
    </section>
  );
}
