// What both portals share: settings, sign-in, the API client, branding, the header, and error display.
import type { ComponentChildren } from 'preact';
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { answer, createApi, type Api } from './api';
import { ApiError } from './api-error';
import { currentSession, signInCode, signInWithEntra, signInWithToken, takeSignInCode, type Session } from './auth';
import { loadPortalConfig, localSignIn, type PortalConfig } from './portal-routes';
import type { Branding } from './schemas';
import './style.css';

export interface Context {
  api: Api;
  config: PortalConfig;
  session: Session;
  branding: Branding;
}

/** Branding from the Core API as CSS custom properties (values the service has checked as CSS colours). */
function applyBranding(b: Branding, page: string) {
  const root = document.documentElement.style;
  if (b.primary_color) root.setProperty('--primary', b.primary_color);
  if (b.primary_text_color) root.setProperty('--primary-text', b.primary_text_color);
  document.title = `${b.page_title || b.company_name || 'Agent platform'} · ${page}`;
}

export function message(e: unknown): string {
  if (e instanceof ApiError)
    return e.details.length > 0
      ? `${e.message}: ${e.details.map((d) => `${d.field} ${d.message}`).join('; ')}`
      : e.message;
  return e instanceof Error ? e.message : String(e);
}

export function ErrorText({ error }: { error: unknown }) {
  if (error === undefined || error === null) return null;
  return (
    <p class="error" role="alert">
      {message(error)}
    </p>
  );
}

/** A table's header row: its column names, and a last column of row actions (named for screen readers). */
export function TableHead({ columns, actions = false }: { columns: readonly string[]; actions?: boolean }) {
  return (
    <thead>
      <tr>
        {columns.map((c) => (
          <th key={c}>{c}</th>
        ))}
        {actions && (
          <th>
            <span class="visually-hidden">Actions</span>
          </th>
        )}
      </tr>
    </thead>
  );
}

/** A form's submit handler: the page stays, `save` runs, and what it throws goes to `onError` to be shown. */
export const submitTo = (save: () => Promise<unknown>, onError: (e: unknown) => void) => (e: Event) => {
  e.preventDefault();
  save().catch(onError);
};

/** Saves a file an answer carried as one the browser downloads. */
export function saveAs(file: Blob, fileName: string): void {
  const link = document.createElement('a');
  link.href = URL.createObjectURL(file);
  link.download = fileName;
  link.click();
  URL.revokeObjectURL(link.href);
}

/** A button that picks one file (the input itself hidden, reachable through its label). */
export function FilePicker({
  id,
  label,
  accept,
  onFile,
}: {
  id: string;
  label: string;
  accept?: string;
  onFile: (file: File) => void;
}) {
  return (
    <>
      <label for={id} class="button">
        {label}
      </label>
      <input
        id={id}
        type="file"
        class="visually-hidden"
        {...(accept ? { accept } : {})}
        onChange={(e) => {
          const file = e.currentTarget.files?.[0];
          e.currentTarget.value = '';
          if (file) onFile(file);
        }}
      />
    </>
  );
}

function SignIn({ config, onSession }: { config: PortalConfig; onSession: (s: Session) => void }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState<string>();
  if (config.sign_in.kind === 'entra')
    return (
      <main class="sign-in">
        <h1>Sign in</h1>
        <button onClick={() => void signInWithEntra(config)}>Sign in with Microsoft</button>
      </main>
    );
  if (config.sign_in.kind === 'none')
    return (
      <main class="sign-in">
        <h1>Sign in</h1>
        <p>
          This service validates an identity provider's tokens, but no portal sign-in is configured
          (PORTAL_ENTRA_CLIENT_ID).
        </p>
      </main>
    );
  const withToken = (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        const result = signInWithToken(token);
        if (typeof result === 'string') setError(result);
        else onSession(result);
      }}
    >
      <label for="token">
        Token of the local identity provider (run <code>npm run -s token</code>, or the command the service printed when
        it started)
      </label>
      <textarea id="token" rows={4} value={token} onInput={(e) => setToken(e.currentTarget.value)} required />
      <button type="submit">Sign in</button>
    </form>
  );
  const code = signInCode();
  return (
    <main class="sign-in">
      <h1>Sign in</h1>
      {config.sign_in.development_sign_in && code ? (
        <>
          <DevelopmentSignIn code={code} onSession={onSession} onError={setError} />
          <details>
            <summary>Use a token instead</summary>
            {withToken}
          </details>
        </>
      ) : config.sign_in.development_sign_in ? (
        <>
          {/* Without the code the service mints nothing: say where it is rather than offer a form that fails. */}
          <p>
            To sign in by user name, open the link <code>npm start</code> printed (it ends in <code>#sign-in=…</code>,
            the sign-in code of this service), or paste a token.
          </p>
          {withToken}
        </>
      ) : (
        withToken
      )}
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </main>
  );
}

/**
 * Development mode (the local identity provider on a service that listens on this machine only): sign in
 * as any user by name, the service minting the token given the sign-in code. Never offered with a real
 * identity provider.
 */
function DevelopmentSignIn({
  code,
  onSession,
  onError,
}: {
  code: string;
  onSession: (s: Session) => void;
  onError: (e: string) => void;
}) {
  const [upn, setUpn] = useState('owner@local.test');
  const [name, setName] = useState('');
  return (
    <form
      class="development-sign-in"
      onSubmit={(e) => {
        e.preventDefault();
        void (async () => {
          const signedIn = await localSignIn({ upn, code, ...(name.trim() ? { name } : {}) });
          if ('refused' in signedIn) return onError(signedIn.refused);
          const result = signInWithToken(signedIn.token);
          if (typeof result === 'string') onError(result);
          else onSession(result);
        })().catch((e: unknown) => onError(String(e)));
      }}
    >
      <p class="muted">
        Development mode: the service uses its local identity provider, so you sign in as whoever you name.
      </p>
      <label for="dev-upn">User name (UPN)</label>
      <input id="dev-upn" type="email" value={upn} onInput={(e) => setUpn(e.currentTarget.value)} required />
      <label for="dev-name">Display name (optional)</label>
      <input id="dev-name" value={name} onInput={(e) => setName(e.currentTarget.value)} />
      <button type="submit">Continue as this user</button>
    </form>
  );
}

/** Mounts a portal page: signs in, loads the branding, then renders `page` with what it needs. */
export function mount(title: string, page: (ctx: Context) => ComponentChildren) {
  takeSignInCode();
  function Root() {
    const [config, setConfig] = useState<PortalConfig>();
    const [session, setSession] = useState<Session | null>();
    const [ctx, setCtx] = useState<Context>();
    const [error, setError] = useState<unknown>();
    useEffect(() => {
      loadPortalConfig()
        .then(async (c) => {
          setConfig(c);
          setSession((await currentSession(c)) ?? null);
        })
        .catch(setError);
    }, []);
    useEffect(() => {
      if (!config || !session) return;
      const api = createApi(
        config,
        () => session.token(),
        () => session.signOut(),
      );
      answer(api.core.GET('/branding'))
        .then((branding) => {
          applyBranding(branding, title);
          setCtx({ api, config, session, branding });
        })
        .catch(setError);
    }, [config, session]);
    if (error) return <ErrorText error={error} />;
    if (!config || session === undefined) return <p aria-busy="true">Loading…</p>;
    if (session === null) return <SignIn config={config} onSession={setSession} />;
    if (!ctx) return <p aria-busy="true">Loading…</p>;
    return (
      <>
        <header class="top">
          {ctx.branding.logo_url && <img src={ctx.branding.logo_url} alt="" class="logo" />}
          <span class="company">{ctx.branding.company_name || 'Agent platform'}</span>
          <nav aria-label="Portals">
            <a href="/portal/" aria-current={title === 'Chat' ? 'page' : undefined}>
              Chat
            </a>
            <a href="/portal/manage.html" aria-current={title === 'Management' ? 'page' : undefined}>
              Management
            </a>
          </nav>
          <span class="user">{ctx.session.user.name || ctx.session.user.upn}</span>
          <button class="link" onClick={() => ctx.session.signOut()}>
            Sign out
          </button>
        </header>
        {page(ctx)}
      </>
    );
  }
  const app = document.getElementById('app');
  if (app) render(<Root />, app);
}
