// The form of a role assignment: the principal, a built-in role, the scope.
import { useEffect, useState } from 'preact/hooks';
import { type Resource, text } from '../resource';
import type { Definition } from '../schemas';
import { type Context, ErrorText } from '../shell';
import { EditorForm } from './editor';
import { listResources } from './read-resources';

type RoleAssignment = Definition<'roleAssignments-upsert'>;
const PRINCIPAL_TYPES: readonly RoleAssignment['principal_type'][] = ['User', 'Group', 'ServicePrincipal'];
/**
 * A new role assignment: who (a principal's object id and kind), which built-in role (as the API lists them)
 * and where (the instance, or any resource's object id below it). The assignment's name is a new GUID.
 */
export function RoleAssignmentForm({
  ctx,
  onSaved,
  onCancel,
}: {
  ctx: Context;
  onSaved: () => void;
  onCancel: () => void;
}) {
  const [roles, setRoles] = useState<Resource[]>([]);
  const [form, setForm] = useState<
    Pick<RoleAssignment, 'principal_id' | 'principal_type' | 'role_definition_id' | 'scope'>
  >({
    principal_id: '',
    principal_type: 'User',
    role_definition_id: '',
    scope: `/instances/${ctx.config.instance_id}`,
  });
  const [error, setError] = useState<unknown>();
  useEffect(
    () =>
      void listResources(ctx.api, 'Svc.Authorization/roleDefinitions').then((all) => {
        setRoles(all);
        setForm((f) => ({ ...f, role_definition_id: f.role_definition_id || text(all[0]?.object_id) }));
      }, setError),
    [],
  );
  const save = async () => {
    const name = crypto.randomUUID();
    await ctx.api.management.POST('/providers/Svc.Authorization/roleAssignments/{name}', {
      params: { path: { name } },
      body: { type: 'role-assignment', name, ...form },
    });
    onSaved();
  };
  const set =
    (field: 'principal_id' | 'role_definition_id' | 'scope') =>
    (e: { currentTarget: HTMLInputElement | HTMLSelectElement }) =>
      setForm({ ...form, [field]: e.currentTarget.value });
  return (
    <EditorForm save={save} submit="Assign" onCancel={onCancel}>
      <ErrorText error={error} />
      <label for="ra-principal">Principal (object id)</label>
      <input id="ra-principal" value={form.principal_id} onInput={set('principal_id')} required />
      <label for="ra-type">Principal type</label>
      <select
        id="ra-type"
        value={form.principal_type}
        onChange={(e) => {
          const type = PRINCIPAL_TYPES.find((t) => t === e.currentTarget.value);
          if (type) setForm({ ...form, principal_type: type });
        }}
      >
        {PRINCIPAL_TYPES.map((t) => (
          <option key={t}>{t}</option>
        ))}
      </select>
      <label for="ra-role">Role</label>
      <select id="ra-role" value={form.role_definition_id} onChange={set('role_definition_id')}>
        {roles.map((r) => (
          <option key={r.name} value={text(r.object_id)}>
            {text(r.display_name)}
          </option>
        ))}
      </select>
      <label for="ra-scope">Scope (the instance, or a resource&apos;s object id)</label>
      <input id="ra-scope" value={form.scope} onInput={set('scope')} required />
    </EditorForm>
  );
}
