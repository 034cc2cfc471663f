// The portals (chat and management): static files that `npm run build` makes with Vite (portal/ into
// dist/portal), served by the Core API on both hosts, and the settings the pages start from. The pages
// call the public APIs only, with the signed-in user's token.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { z } from 'zod';
import { createHash } from 'node:crypto';
import { forbidden, notFound } from '../shared/errors.js';
import { sameOrigin } from '../shared/http/hosts.js';
import { defineRoute, type Route } from '../shared/http/route.js';
import type { BodilessReply } from '../shared/http/answers.js';
import type { PlatformRequest } from '../shared/http/types.js';
import type { Config } from '../shared/config.js';
import { PACKAGE_ROOT } from '../shared/version.js';
import { isLocalSignInCode, loadLocalKey, mintLocalToken } from '../shared/auth/local-idp.js';
import { json } from '../shared/http/types.js';

export const PORTAL_DIR = path.join(PACKAGE_ROOT, 'dist', 'portal');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};

interface Asset {
  body: Buffer;
  gzip: Buffer | undefined;
  type: string;
  etag: string;
}

let assets: Map<string, Asset> | undefined;

/** Every file of the built portal, read once (a few hundred KB), compressed ahead where that pays. */
function load(): Map<string, Asset> {
  const files = new Map<string, Asset>();
  const walk = (dir: string, prefix: string) => {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return; // not built: every file is then a 404 saying so
    }
    for (const name of names) {
      const full = path.join(dir, name);
      if (statSync(full).isDirectory()) walk(full, `${prefix}${name}/`);
      else {
        const type = TYPES[path.extname(name)];
        if (type === undefined) continue;
        const body = readFileSync(full);
        const compressible = !type.startsWith('image/png') && !type.startsWith('font/') && body.length > 1024;
        files.set(`${prefix}${name}`, {
          body,
          gzip: compressible ? gzipSync(body) : undefined,
          type,
          etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
        });
      }
    }
  };
  walk(PORTAL_DIR, '');
  return files;
}

/** Where the pages may connect and load from: this origin, the Management API, Entra ID when it signs in. */
function contentSecurityPolicy(managementUrl: string, config: Config): string {
  const login = config.portal.entra ? ` ${new URL(config.portal.entra.authority).origin}` : '';
  return [
    "default-src 'self'",
    `connect-src 'self' ${new URL(managementUrl).origin}${login}`,
    "img-src 'self' https: data: blob:",
    "style-src 'self'",
    `frame-src${login || " 'none'"}`,
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "object-src 'none'",
  ].join('; ');
}

function serve(file: string, request: PlatformRequest, config: Config): BodilessReply<200> | BodilessReply<304> {
  assets ??= load();
  const asset = assets.get(file);
  if (!asset)
    throw notFound(assets.size === 0 ? 'The portal is not built: run npm run build' : `No portal file ${file}`);
  // Hashed bundle names never change content; pages are revalidated so a deployment shows at once.
  const headers: Record<string, string> = {
    'content-type': asset.type,
    etag: asset.etag,
    'cache-control': file.startsWith('assets/') ? 'public, max-age=31536000, immutable' : 'no-cache',
    vary: 'accept-encoding',
  };
  if (asset.type.startsWith('text/html'))
    headers['content-security-policy'] = contentSecurityPolicy(config.publicUrls.management, config);
  if (request.header('if-none-match') === asset.etag) return { status: 304, headers };
  if (asset.gzip && /\bgzip\b/.test(request.header('accept-encoding') ?? ''))
    return { status: 200, headers: { ...headers, 'content-encoding': 'gzip' }, raw: asset.gzip };
  return { status: 200, headers, raw: asset.body };
}

const common = { api: 'core', method: 'GET', tag: 'Portal', auth: 'none', errors: 'core' } as const;

/**
 * The portal's development sign-in (a user name instead of a pasted token): only with the local identity
 * provider, and only while the service listens on this machine alone, never with a real identity provider.
 * It also asks for the sign-in code `npm start` prints in the portal link's fragment (derived from the
 * signing key), so another user or container on this machine, which may send any Origin, gets no token.
 */
export const localSignIn = (config: Config) =>
  config.auth.kind === 'local' && !config.portal.entra && ['127.0.0.1', 'localhost', '::1'].includes(config.host);
/** Where the development sign-in code is, for those who come without it. */
const SIGN_IN_CODE_HINT =
  'open the portal link npm start printed (it ends in #sign-in=...), or paste a token (npm run -s token)';
/** Hours a development sign-in lasts. */
const LOCAL_SIGN_IN_HOURS = 8;
const FileParams = z.object({
  file: z
    .string()
    .regex(/^[\w.-]+$/, 'not a portal file name')
    .max(200),
});
const html = { description: 'A page of the portal', contentType: 'text/html' };
const PortalConfig = z.object({
  core_url: z.string(),
  management_url: z.string(),
  instance_id: z.string(),
  sign_in: z.object({ kind: z.enum(['local', 'entra', 'none']) }).loose(),
});
type PortalConfig = z.output<typeof PortalConfig>;

export const routes: readonly Route[] = [
  defineRoute({
    ...common,
    name: 'portal-chat',
    path: '/portal',
    summary: 'The chat portal',
    responses: { 200: html },
    handler: ({ request, services }) => Promise.resolve(serve('index.html', request, services.config)),
  }),
  defineRoute({
    ...common,
    name: 'api-reference',
    path: '/docs',
    summary: 'The API reference: both OpenAPI documents rendered (a redirect to the portal page that shows them)',
    responses: { 302: { description: 'To /portal/docs.html' } },
    handler: () => Promise.resolve({ status: 302 as const, headers: { location: '/portal/docs.html' } }),
  }),
  defineRoute({
    ...common,
    name: 'portal-config',
    path: '/portal/config.json',
    summary: "The portal's settings: where the APIs are, the instance, and how users sign in",
    responses: {
      200: {
        description: 'Portal settings',
        schema: PortalConfig,
      },
    },
    handler: ({ services }) => {
      const { config } = services;
      const signIn: PortalConfig['sign_in'] = config.portal.entra
        ? {
            kind: 'entra',
            client_id: config.portal.entra.clientId,
            authority: config.portal.entra.authority,
            scope: config.portal.entra.scope,
          }
        : {
            kind: config.auth.kind === 'local' ? 'local' : 'none',
            ...(localSignIn(config) ? { development_sign_in: true } : {}),
          };
      return Promise.resolve(
        json(200, {
          core_url: '',
          management_url: config.publicUrls.management,
          instance_id: config.instanceId,
          sign_in: signIn,
        }),
      );
    },
  }),
  defineRoute({
    ...common,
    method: 'POST',
    name: 'portal-local-sign-in',
    path: '/portal/local-sign-in',
    summary:
      'Development sign-in: a token of the local identity provider for the user named, given the sign-in code ' +
      'npm start prints (404 unless the service uses the local identity provider and listens on loopback only)',
    body: z
      .object({
        upn: z
          .string()
          .trim()
          .regex(/^[^\s@]{1,100}@[^\s@]{1,100}$/, 'upn must look like user@domain'),
        name: z.string().trim().min(1).max(200).optional(),
        // Optional here so that a missing code is the 403 that says what to do, not a validation error.
        code: z.string().max(200).optional().describe('The sign-in code: the #sign-in= of the link npm start prints'),
      })
      .strict(),
    responses: {
      200: {
        description: 'A token of the local identity provider',
        schema: z.object({ access_token: z.string(), expires_in: z.number().int() }),
      },
    },
    handler: async ({ services, body, request }) => {
      const { config } = services;
      if (!localSignIn(config) || config.auth.kind !== 'local') throw notFound('Development sign-in is not available');
      // Only the portal's own page may sign in: a browser names the page's origin, which another site cannot forge.
      if (!sameOrigin(config, request.header('origin'), request.header('host')))
        throw forbidden("Development sign-in answers only the portal's own page (its Origin)");
      // The Origin restrains browsers only; a local process may send any, but cannot read the signing key.
      if (!(await isLocalSignInCode(config.auth.keyFile, body.code))) {
        const problem = body.code ? 'That sign-in code is wrong' : 'Development sign-in needs its sign-in code';
        throw forbidden(`${problem}: ${SIGN_IN_CODE_HINT}`);
      }
      const expiresIn = LOCAL_SIGN_IN_HOURS * 3600;
      const token = await mintLocalToken(
        await loadLocalKey(config.auth.keyFile),
        config.auth.issuer,
        config.auth.audience,
        { upn: body.upn, ...(body.name ? { name: body.name } : {}), expiresInSeconds: expiresIn },
      );
      return json(200, { access_token: token, expires_in: expiresIn });
    },
  }),
  defineRoute({
    ...common,
    name: 'portal-file',
    path: '/portal/{file}',
    summary: 'A page or file of the portal',
    params: FileParams,
    responses: { 200: { description: 'The file' } },
    handler: ({ request, params, services }) => Promise.resolve(serve(params.file, request, services.config)),
  }),
  defineRoute({
    ...common,
    name: 'portal-asset',
    path: '/portal/assets/{file}',
    summary: "The portal's scripts and styles (content-hashed names, cached for good)",
    params: FileParams,
    responses: { 200: { description: 'The file' } },
    handler: ({ request, params, services }) =>
      Promise.resolve(serve(`assets/${params.file}`, request, services.config)),
  }),
];
