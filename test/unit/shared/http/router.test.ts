import { describe, expect, it } from 'vitest';
import { defineRoute, type Route } from '../../../../shared/http/route.js';
import { createRouter } from '../../../../shared/http/router.js';
import { json } from '../../../../shared/http/types.js';

const route = (method: 'GET' | 'POST', path: string): Route =>
  defineRoute({
    name: `${method}-${path}`,
    api: 'management',
    method,
    path,
    summary: '',
    tag: 't',
    auth: 'none',
    errors: 'management',
    responses: {},
    handler: () => Promise.resolve(json(200, {})),
  });

describe('router', () => {
  const generic = route('GET', '/instances/{instanceId}/providers/{provider}/{type}/{name}');
  const literal = route('GET', '/instances/{instanceId}/providers/Svc.Agent/agents/{name}');
  const post = route('POST', '/instances/{instanceId}/providers/Svc.Agent/agents/{name}');
  const match = createRouter([generic, literal, post]);

  it('prefers literal segments over parameters, whatever the table order', () => {
    const m = match('GET', '/instances/i/providers/Svc.Agent/agents/a1');
    expect(m).toMatchObject({ kind: 'found', route: literal, params: { instanceId: 'i', name: 'a1' } });
    expect(match('GET', '/instances/i/providers/Svc.Prompt/prompts/p')).toMatchObject({
      kind: 'found',
      route: generic,
    });
  });

  it('matches literals case-insensitively and decodes parameters', () => {
    const m = match('GET', '/INSTANCES/i/providers/svc.agent/AGENTS/a%20b');
    expect(m).toMatchObject({ kind: 'found', route: literal, params: { name: 'a b' } });
  });

  it('tells a wrong method from an unknown path', () => {
    expect(match('DELETE', '/instances/i/providers/Svc.Agent/agents/a')).toEqual({
      kind: 'method-not-allowed',
      allow: ['GET', 'POST'],
    });
    expect(match('GET', '/nothing/here')).toEqual({ kind: 'not-found' });
    expect(match('GET', '/instances/i/providers/Svc.Agent/agents/%E0%A4%A')).toEqual({ kind: 'not-found' });
  });
});
