// get-properties and set-properties over HTTP: every rule of agent properties.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_DEFAULT_USER, oidForUpn } from '../../../shared/auth/local-idp.js';
import { ROLE_IDS, roleDefinitionPath } from '../../../shared/providers/types/roles.js';
import { effectiveShielding } from '../../../shared/providers/types/agent-settings.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { INSTANCE } from '../../support/services.js';

const agentPath = (name: string) => `/instances/${INSTANCE}/providers/Svc.Agent/agents/${name}`;

describe('agent property actions', () => {
  let app: TestApp;
  const agentUrl = (name: string) => `${app.management}${agentPath(name)}`;
  const get = (name: string, body: unknown, as?: string) =>
    app.call('POST', `${agentUrl(name)}/get-properties`, { body, ...(as ? { as } : {}) });
  const set = (name: string, body: unknown, as?: string) =>
    app.call('POST', `${agentUrl(name)}/set-properties`, { body, ...(as ? { as } : {}) });
  const props = async (name: string, property_names: string[]) =>
    ((await get(name, { property_names })).body as { resource: { properties: Record<string, unknown> } }).resource
      .properties;
  const assign = (upn: string, role: string, scope: string) => {
    const name = randomUUID();
    return app.call(
      'POST',
      `${app.management}/instances/${INSTANCE}/providers/Svc.Authorization/roleAssignments/${name}`,
      {
        body: {
          name,
          principal_id: oidForUpn(upn),
          principal_type: 'User',
          role_definition_id: roleDefinitionPath(role),
          scope,
        },
      },
    );
  };

  beforeAll(async () => {
    app = await startTestApp();
    await app.call('POST', agentUrl('props'), {
      body: {
        name: 'props',
        display_name: 'Props',
        description: 'd',
        workflow_object_id: '/instances/x/providers/Svc.Agent/workflows/w',
        tool_object_ids: ['t1'],
      },
    });
  });
  afterAll(() => app.close());

  it('reads read-only and writable properties, with defaults', async () => {
    const r = await get('props', {
      property_names: [
        'object_id',
        'type',
        'name',
        'created_by',
        'deleted',
        'workflow',
        'tools',
        'virtual_security_group_id',
        'display_name',
        'show_message_tokens',
        'cache_settings',
      ],
      metadata_property_names: ['welcome_message'],
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      object_id: agentPath('props'),
      is_success: true,
      resource: {
        properties: {
          object_id: agentPath('props'),
          type: 'agent',
          name: 'props',
          created_by: LOCAL_DEFAULT_USER.upn,
          deleted: false,
          workflow: { object_id: '/instances/x/providers/Svc.Agent/workflows/w' },
          tools: [{ object_id: 't1' }],
          virtual_security_group_id: expect.stringMatching(/^[0-9a-f-]{36}$/) as string,
          display_name: 'Props',
          show_message_tokens: true,
          cache_settings: null,
        },
        metadata_properties: { welcome_message: null },
      },
    });
  });

  it('answers 400 in problem details for an empty request or an unknown name', async () => {
    const empty = await get('props', {});
    expect(empty.status).toBe(400);
    expect(empty.headers.get('content-type')).toContain('application/problem+json');
    expect(empty.body).toMatchObject({ status: 400, instance: `${agentPath('props')}/get-properties` });
    const unknown = await get('props', {
      property_names: ['display_name', 'colour'],
      metadata_property_names: ['mood'],
    });
    expect(unknown).toMatchObject({ status: 400, body: { detail: 'Invalid property names: colour, mood' } });
    expect((await set('props', {})).status).toBe(400);
    expect((await set('props', { properties: {}, metadata_properties: {} })).status).toBe(400);
    expect(await set('props', { properties: { colour: 'red' } })).toMatchObject({
      status: 400,
      body: { detail: 'Invalid property names: colour' },
    });
  });

  it('answers 500 for a valid property the agent lacks', async () => {
    const r = await get('props', { property_names: ['cost_center'] });
    expect(r).toMatchObject({ status: 500, body: { status: 500, detail: 'The agent has no value for: cost_center' } });
  });

  it('refuses to write a read-only property', async () => {
    for (const name of ['object_id', 'created_on', 'virtual_security_group_id', 'workflow', 'deleted']) {
      const r = await set('props', { properties: { [name]: 'x' } });
      expect(r.status, name).toBe(400);
      expect((r.body as { detail: string }).detail).toContain('Read-only');
    }
  });

  it('writes scalars and sets updated_on and updated_by itself, also when they are omitted', async () => {
    const before = (await props('props', ['updated_on'])).updated_on as string;
    await new Promise((r) => setTimeout(r, 5));
    expect(
      await set('props', { properties: { cost_center: 'CC-1', description: 'new', show_view_prompt: false } }),
    ).toMatchObject({
      status: 200,
      body: { object_id: agentPath('props'), is_success: true },
    });
    const after = await props('props', ['cost_center', 'description', 'show_view_prompt', 'updated_on', 'updated_by']);
    expect(after).toMatchObject({
      cost_center: 'CC-1',
      description: 'new',
      show_view_prompt: false,
      updated_by: LOCAL_DEFAULT_USER.upn,
    });
    expect(after.updated_on).not.toBe(before);
  });

  it('requires updated_on and updated_by to be null when given', async () => {
    expect(
      (await set('props', { properties: { updated_on: null, updated_by: null, cost_center: 'CC-2' } })).status,
    ).toBe(200);
    const r = await set('props', { properties: { updated_on: '2020-01-01T00:00:00Z' } });
    expect(r.status).toBe(400);
    expect((r.body as { detail: string }).detail).toContain('updated_on');
  });

  it('validates settings objects with their nested rules and defaults, and clears them with null', async () => {
    const noSettings = await set('props', {
      properties: { text_rewrite_settings: { user_prompt_rewrite_enabled: true } },
    });
    expect(noSettings.status).toBe(400);
    expect((noSettings.body as { detail: string }).detail).toContain(
      'text_rewrite_settings.user_prompt_rewrite_settings',
    );
    const settingsWhileOff = await set('props', {
      properties: {
        cache_settings: {
          semantic_cache_enabled: false,
          semantic_cache_settings: { embedding_ai_model_object_id: 'm' },
        },
      },
    });
    expect(settingsWhileOff.status).toBe(400);
    const threshold = await set('props', {
      properties: {
        cache_settings: {
          semantic_cache_enabled: true,
          semantic_cache_settings: { embedding_ai_model_object_id: 'm', minimum_similarity_threshold: 1.5 },
        },
      },
    });
    expect(threshold.status).toBe(400);

    const ok = await set('props', {
      properties: {
        cache_settings: {
          semantic_cache_enabled: true,
          semantic_cache_settings: { embedding_ai_model_object_id: 'm' },
        },
        realtime_speech_settings: { realtime_speech_ai_model_object_id: 'rt' },
        conversation_history_settings: { enabled: true, max_history: 5 },
      },
    });
    expect(ok.status).toBe(200);
    const stored = await props('props', [
      'cache_settings',
      'realtime_speech_settings',
      'conversation_history_settings',
    ]);
    expect(stored.cache_settings).toEqual({
      semantic_cache_enabled: true,
      semantic_cache_settings: { embedding_ai_model_object_id: 'm', minimum_similarity_threshold: 0.975 },
    });
    expect(stored.realtime_speech_settings).toEqual({
      enabled: false,
      realtime_speech_ai_model_object_id: 'rt',
      stop_words: ['stop', 'end conversation', 'goodbye'],
      max_session_duration_seconds: 0,
      show_transcriptions: true,
      include_conversation_history: true,
    });
    expect((await set('props', { properties: { cache_settings: null } })).status).toBe(200);
    expect(await props('props', ['cache_settings'])).toEqual({ cache_settings: null });
  });

  it('writes and removes the welcome_message metadata property', async () => {
    expect((await set('props', { metadata_properties: { welcome_message: 'Hello!' } })).status).toBe(200);
    const r = await get('props', { metadata_property_names: ['welcome_message'] });
    expect((r.body as { resource: { metadata_properties: unknown } }).resource.metadata_properties).toEqual({
      welcome_message: 'Hello!',
    });
    await set('props', { metadata_properties: { welcome_message: null } });
    const cleared = await get('props', { metadata_property_names: ['welcome_message'] });
    expect((cleared.body as { resource: { metadata_properties: unknown } }).resource.metadata_properties).toEqual({
      welcome_message: null,
    });
    expect((await set('props', { metadata_properties: { welcome_message: 42 } })).status).toBe(400);
  });

  it('changes owner_user_id only for an Owner, never to null, and only when it differs', async () => {
    await app.call('POST', agentUrl('owned'), { body: { name: 'owned' } });
    const contributor = 'contrib-props@example.com';
    await assign(contributor, ROLE_IDS.contributor, `/instances/${INSTANCE}`);
    const newOwner = oidForUpn('next-owner@example.com');
    expect((await set('owned', { properties: { owner_user_id: newOwner } }, contributor)).status).toBe(403);
    // The same value is not a change: no Owner role needed.
    expect((await set('owned', { properties: { owner_user_id: LOCAL_DEFAULT_USER.oid } }, contributor)).status).toBe(
      200,
    );
    expect((await set('owned', { properties: { owner_user_id: null } })).status).toBe(400);
    expect((await set('owned', { properties: { owner_user_id: newOwner } })).status).toBe(200);
    expect(await props('owned', ['owner_user_id'])).toEqual({ owner_user_id: newOwner });
    // The new owner can now act as Owner of the agent.
    expect((await get('owned', { property_names: ['name'] }, 'next-owner@example.com')).status).toBe(200);
  });

  it('answers 403 without access and 404 for an unknown agent', async () => {
    expect((await get('props', { property_names: ['name'] }, 'stranger@example.com')).status).toBe(403);
    const reader = 'props-reader@example.com';
    await assign(reader, ROLE_IDS.reader, agentPath('props'));
    expect((await get('props', { property_names: ['name'] }, reader)).status).toBe(200);
    expect((await set('props', { properties: { cost_center: 'x' } }, reader)).status).toBe(403);
    expect(await get('nope', { property_names: ['name'] })).toMatchObject({
      status: 404,
      body: { status: 404, title: 'NotFound' },
    });
  });

  it('accepts the obsolete gatekeeper_settings on load and uses it only without shielding_settings', async () => {
    const legacy = { name: 'legacy', gatekeeper_settings: { use_system_setting: true, options: ['ContentSafety'] } };
    expect((await app.call('POST', agentUrl('legacy'), { body: legacy })).status).toBe(200);
    const stored = (
      (await app.call('GET', agentUrl('legacy'))).body as { resource: Parameters<typeof effectiveShielding>[0] }
    ).resource;
    expect(effectiveShielding(stored)).toEqual({ pre: ['ContentSafety'], post: ['ContentSafety'] });
    await set('legacy', {
      properties: { shielding_settings: { pre_completion_plugins: [{ plugin_name: 'Dotnet-Builtin-Blocklist' }] } },
    });
    const updated = (
      (await app.call('GET', agentUrl('legacy'))).body as { resource: Parameters<typeof effectiveShielding>[0] }
    ).resource;
    expect(effectiveShielding(updated)).toEqual({ pre: ['Dotnet-Builtin-Blocklist'], post: [] });
    await set('legacy', { properties: { shielding_settings: null } });
    const off = (
      (await app.call('GET', agentUrl('legacy'))).body as { resource: Parameters<typeof effectiveShielding>[0] }
    ).resource;
    expect(effectiveShielding(off)).toEqual({ pre: [], post: [] });
  });
});
