import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ROUTES } from '../../../../functions/groups.js';
import { DomainError } from '../../../../shared/errors.js';
import { defineRoute, type Route } from '../../../../shared/http/route.js';
import { json } from '../../../../shared/http/types.js';
import { call } from '../../../support/requests.js';
import { INSTANCE, testServices, type TestServices } from '../../../support/services.js';

const Body = z.object({
  user_prompt: z.string({ error: 'user_prompt is required' }).min(1, 'user_prompt is required'),
  settings: z.object({ temperature: z.number().min(0).max(1, 'temperature must be between 0 and 1') }).optional(),
});

const echo = (errors: 'core' | 'management' | 'problem', path: string): Route =>
  defineRoute({
    name: `echo-${errors}`,
    api: errors === 'core' ? 'core' : 'management',
    method: 'POST',
    path,
    summary: 'echo',
    tag: 'test',
    auth: 'any',
    errors,
    params: z.object({ instanceId: z.string() }),
    body: Body,
    responses: {},
    handler: ({ body, principal }) => Promise.resolve(json(200, { prompt: body.user_prompt, upn: principal.upn })),
  });

const failing = defineRoute({
  name: 'boom',
  api: 'core',
  method: 'GET',
  path: '/instances/{instanceId}/boom',
  summary: 'fails',
  tag: 'test',
  auth: 'none',
  errors: 'core',
  responses: {},
  handler: () => Promise.reject(new Error('secret connection string leaked')),
});

const routes = [
  echo('core', '/instances/{instanceId}/echo'),
  echo('management', '/instances/{instanceId}/m-echo'),
  echo('problem', '/instances/{instanceId}/p-echo'),
  failing,
  ...ROUTES,
];

describe('pipeline', () => {
  let s: TestServices;
  let auth: Record<string, string>;
  beforeAll(async () => {
    s = await testServices();
    auth = { authorization: `Bearer ${await s.token()}` };
  });

  it('answers status without credentials, with its documented fields', async () => {
    const r = await call(routes, s, { api: 'core', path: '/status' });
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ status: 'ready', name: 'CoreAPI', version: '1.2.3', instance_id: INSTANCE });
    const m = await call(routes, s, { api: 'management', path: '/status' });
    expect(m.json).toMatchObject({ name: 'ManagementAPI', instance_id: INSTANCE });
  });

  it('echoes a well-formed x-request-id and makes one otherwise', async () => {
    const given = await call(routes, s, { api: 'core', path: '/status', headers: { 'x-request-id': 'abc-123' } });
    expect(given.headers?.['x-request-id']).toBe('abc-123');
    const bad = await call(routes, s, {
      api: 'core',
      path: '/status',
      headers: { 'x-request-id': 'no spaces allowed' },
    });
    expect(bad.headers?.['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('answers 404 for another instance id, before anything else', async () => {
    const r = await call(routes, s, {
      method: 'POST',
      path: '/instances/00000000-0000-0000-0000-000000000000/echo',
      body: {},
    });
    expect(r.status).toBe(404);
    expect(r.json).toMatchObject({ error: { code: 'NotFound' } });
  });

  it('answers 401 with WWW-Authenticate when no credential is sent', async () => {
    const r = await call(routes, s, {
      method: 'POST',
      path: `/instances/${INSTANCE}/echo`,
      body: { user_prompt: 'x' },
    });
    expect(r.status).toBe(401);
    expect(r.headers?.['www-authenticate']).toBe('Bearer');
    expect(r.json).toEqual({ error: { code: 'Unauthorized', message: 'Authentication required' } });
  });

  it('hands the verified principal to the handler', async () => {
    const r = await call(routes, s, {
      method: 'POST',
      path: `/instances/${INSTANCE}/echo`,
      headers: auth,
      body: { user_prompt: 'hi' },
    });
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ prompt: 'hi', upn: 'alice@example.com' });
  });

  it('answers the Core validation envelope with each failed field', async () => {
    const r = await call(routes, s, {
      method: 'POST',
      path: `/instances/${INSTANCE}/echo`,
      headers: auth,
      body: { settings: { temperature: 3 } },
    });
    expect(r.status).toBe(400);
    expect(r.json).toEqual({
      error: {
        code: 'ValidationError',
        message: 'user_prompt is required',
        details: [
          { field: 'user_prompt', message: 'user_prompt is required' },
          { field: 'settings.temperature', message: 'temperature must be between 0 and 1' },
        ],
      },
    });
  });

  it('answers the Management envelope and problem details in their own shapes', async () => {
    const m = await call(routes, s, { method: 'POST', path: `/instances/${INSTANCE}/m-echo`, headers: auth, body: {} });
    expect(m.status).toBe(400);
    expect(m.json).toEqual({ error: { code: 'BadRequest', message: 'user_prompt: user_prompt is required' } });
    const p = await call(routes, s, { method: 'POST', path: `/instances/${INSTANCE}/p-echo`, headers: auth, body: {} });
    expect(p.status).toBe(400);
    expect(p.headers?.['content-type']).toBe('application/problem+json');
    expect(p.json).toMatchObject({
      title: 'BadRequest',
      status: 400,
      detail: 'user_prompt: user_prompt is required',
      instance: `/instances/${INSTANCE}/p-echo`,
    });
  });

  it('answers 400 for a body that is not JSON, 415 for one not sent as JSON, and 413 past the size limit', async () => {
    const bad = await call(routes, s, {
      method: 'POST',
      path: `/instances/${INSTANCE}/echo`,
      headers: { ...auth, 'content-type': 'application/json' },
      body: '{"user_prompt":',
    });
    expect(bad.status).toBe(400);
    expect(bad.json).toMatchObject({
      error: {
        code: 'ValidationError',
        message: 'Request body is not valid JSON',
        details: [{ field: 'body', message: 'Request body is not valid JSON' }],
      },
    });
    const untyped = await call(routes, s, {
      method: 'POST',
      path: `/instances/${INSTANCE}/echo`,
      headers: { ...auth, 'content-type': 'text/plain' },
      body: '{"user_prompt":"x"}',
    });
    expect(untyped.status).toBe(415);
    expect(untyped.json).toMatchObject({ error: { code: 'UnsupportedMediaType' } });
    const big = await call(routes, s, {
      method: 'POST',
      path: `/instances/${INSTANCE}/echo`,
      headers: auth,
      body: { user_prompt: 'x'.repeat(s.config.maxJsonBodyBytes) },
    });
    expect(big.status).toBe(413);
  });

  it('logs an unexpected error with the request id and answers a generic 500', async () => {
    const r = await call(routes, s, { path: `/instances/${INSTANCE}/boom`, headers: { 'x-request-id': 'req-500' } });
    expect(r.status).toBe(500);
    expect(JSON.stringify(r.json)).not.toContain('secret');
    expect(r.json).toEqual({ error: { code: 'InternalError', message: 'An unexpected error occurred' } });
    const logged = s.log.records.find((x) => x.level === 'error');
    expect(logged?.fields).toMatchObject({ requestId: 'req-500' });
    expect(String(logged?.fields?.error)).toContain('secret connection string leaked');
  });

  it('lets an DomainError carry its own body and headers (the 429 quota response)', async () => {
    const quota = defineRoute({
      name: 'quota',
      api: 'core',
      method: 'GET',
      path: '/q',
      summary: '',
      tag: 't',
      auth: 'none',
      errors: 'core',
      responses: {},
      handler: () =>
        Promise.reject(
          new DomainError('rate-limited', 'QuotaExceeded', 'slow down', {
            headers: { 'retry-after': '60' },
            body: { quota_exceeded: true },
          }),
        ),
    });
    const r = await call([quota], s, { path: '/q' });
    expect(r.status).toBe(429);
    expect(r.headers?.['retry-after']).toBe('60');
    expect(r.json).toEqual({ quota_exceeded: true });
  });
});
