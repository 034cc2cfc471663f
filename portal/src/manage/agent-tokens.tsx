// An agent's access tokens: the secret is shown once, when it is made.
import { useEffect, useState } from 'preact/hooks';
import { type Context, ErrorText, submitTo } from '../shell';
export interface TokenView {
  id: string;
  name: string;
  description?: string;
  expiration_date?: string;
  active?: boolean;
  last_used_on?: string | null;
}

/** Agent access tokens: the secret is shown once, when it is made. */
export function AgentTokens({ ctx, agent }: { ctx: Context; agent: string }) {
  const base = `/providers/Svc.Agent/agents/${encodeURIComponent(agent)}/agent-access-tokens`;
  const [tokens, setTokens] = useState<TokenView[]>([]);
  const [name, setName] = useState('');
  const [secret, setSecret] = useState<string>();
  const [error, setError] = useState<unknown>();
  const load = () => ctx.api.all<{ resource: TokenView }>('management', base).then((l) => setTokens(l.map((t) => t.resource)), setError);
  useEffect(() => void load(), [agent]);
  const create = async () => {
    const r = await ctx.api.json<{ resource: string }>('management', base, { method: 'POST', json: { type: 'agent-access-token', name } });
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
            {t.name} {t.active === false && <span class="muted">(deactivated)</span>} {t.expiration_date && <span class="muted">expires {t.expiration_date}</span>}{' '}
            <span class="muted">{t.last_used_on ? `last used ${t.last_used_on.slice(0, 16).replace('T', ' ')} UTC` : 'never used'}</span>{' '}
            <button class="link" aria-label={`${t.active === false ? 'Activate' : 'Deactivate'} ${t.name}`} onClick={() => void ctx.api.call('management', `${base}/${t.id}/${t.active === false ? 'activate' : 'deactivate'}`, { method: 'POST' }).then(load, setError)}>
              {t.active === false ? 'Activate' : 'Deactivate'}
            </button>{' '}
            <button class="link" aria-label={`Revoke ${t.name}`} onClick={() => void ctx.api.call('management', `${base}/${t.id}`, { method: 'DELETE' }).then(load, setError)}>
              Revoke
            </button>
          </li>
        ))}
      </ul>
      <form
        class="row"
        onSubmit={submitTo(create, setError)}
      >
        <label for="token-name">Token name</label>
        <input id="token-name" value={name} onInput={(e) => setName(e.currentTarget.value)} required />
        <button type="submit">Issue token</button>
      </form>
      <ErrorText error={error} />
    </section>
  );
}
