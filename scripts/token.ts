// `npm run token`: prints a bearer token signed by the local identity provider, on stdout alone.
import { parseArgs } from 'node:util';
import { LOCAL_DEFAULT_USER, loadLocalKey, mintLocalToken } from '../shared/auth/local-idp.js';
import { loadConfig } from '../shared/config.js';

const USAGE =
  'npm run token -- [--upn alice@example.com] [--oid GUID] [--name "Alice"] [--groups g1,g2] [--roles r1,r2] ' +
  '[--expires-in 3600]';

async function main() {
  const { values } = parseArgs({
    options: {
      upn: { type: 'string' },
      oid: { type: 'string' },
      name: { type: 'string' },
      groups: { type: 'string' },
      roles: { type: 'string' },
      'expires-in': { type: 'string' },
      help: { type: 'boolean' },
    },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const config = loadConfig();
  if (config.auth.kind !== 'local')
    throw new Error('npm run token signs with the local identity provider; AUTH_* settings are set');
  const list = (v: string | undefined) =>
    v
      ? v
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean)
      : [];
  const isDefault = values.upn === undefined;
  const token = await mintLocalToken(
    await loadLocalKey(config.auth.keyFile),
    config.auth.issuer,
    config.auth.audience,
    {
      upn: values.upn ?? LOCAL_DEFAULT_USER.upn,
      ...(values.oid ? { oid: values.oid } : isDefault ? { oid: LOCAL_DEFAULT_USER.oid } : {}),
      ...(values.name ? { name: values.name } : isDefault ? { name: LOCAL_DEFAULT_USER.name } : {}),
      groups: list(values.groups),
      roles: list(values.roles),
      expiresInSeconds: values['expires-in'] ? Number(values['expires-in']) : 3600,
    },
  );
  process.stdout.write(`${token}\n`);
}

main().catch((e: unknown) => {
  process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n${USAGE}\n`);
  process.exit(1);
});
