// The built-in role definitions and action matching.

export interface RoleDefinition {
  type: 'role-definition';
  /** The role's GUID. */
  name: string;
  object_id: string;
  display_name: string;
  description: string;
  assignable_scopes: string[];
  permissions: { actions: string[]; not_actions: string[]; data_actions: string[]; not_data_actions: string[] };
}

/** Analytics actions: granted only by Analytics Reader, never by a wildcard of another role. */
export const ANALYTICS_ACTIONS = [
  'Svc.Analytics/analytics/read',
  'Svc.Conversation/conversationAnalytics/read',
  'Svc.Context/contextAnalytics/read',
];
const NOT_ANALYTICS = ['Svc.Analytics/*', 'Svc.Conversation/conversationAnalytics/*', 'Svc.Context/contextAnalytics/*'];

export const ROLE_IDS = {
  owner: '1301f8d4-3bea-4880-945f-315dbd2ddb46',
  contributor: 'a9f0020f-6e3a-49bf-8d1d-35fd53058edf',
  reader: '00a53e72-f66e-4c03-8f81-7e885fd2eb35',
  userAccessAdministrator: 'fb8e0fd0-f7e2-4957-89d6-19f44f7d6618',
  rbacAdministrator: '17ca4b59-3aee-497d-b43b-95dd7d916f99',
  agentAccessTokensContributor: '8c5ea0d3-f5a1-4be5-90a7-a12921c45542',
  analyticsReader: 'b8c7ff80-e418-4346-b6dd-f191eaccf72f',
} as const;

export const roleDefinitionPath = (id: string) => `/providers/Svc.Authorization/roleDefinitions/${id}`;

interface RoleSpec {
  id: string;
  display_name: string;
  description: string;
  actions: string[];
  not_actions?: string[];
}

const role = ({ id, display_name, description, actions, not_actions = [] }: RoleSpec): RoleDefinition => ({
  type: 'role-definition',
  name: id,
  object_id: roleDefinitionPath(id),
  display_name,
  description,
  assignable_scopes: ['/'],
  permissions: { actions, not_actions, data_actions: [], not_data_actions: [] },
});

export const ROLE_DEFINITIONS: readonly RoleDefinition[] = [
  role({
    id: ROLE_IDS.owner,
    display_name: 'Owner',
    description: 'Full access, including role assignments and owner changes.',
    actions: ['*'],
    not_actions: NOT_ANALYTICS,
  }),
  role({
    id: ROLE_IDS.contributor,
    display_name: 'Contributor',
    description: 'Full access to resources, but cannot write or delete Svc.Authorization resources.',
    actions: ['*'],
    not_actions: ['Svc.Authorization/*/write', 'Svc.Authorization/*/delete', ...NOT_ANALYTICS],
  }),
  role({
    id: ROLE_IDS.reader,
    display_name: 'Reader',
    description: 'Reads resources; on an agent, also uses it through the Core API.',
    actions: ['*/read'],
    not_actions: NOT_ANALYTICS,
  }),
  role({
    id: ROLE_IDS.userAccessAdministrator,
    display_name: 'User Access Administrator',
    description: 'Reads resources and manages role assignments.',
    actions: ['*/read', 'Svc.Authorization/*'],
    not_actions: NOT_ANALYTICS,
  }),
  role({
    id: ROLE_IDS.rbacAdministrator,
    display_name: 'Role Based Access Control Administrator',
    description: 'Manages role assignments and reads role definitions.',
    actions: ['Svc.Authorization/roleAssignments/*', 'Svc.Authorization/roleDefinitions/read'],
  }),
  role({
    id: ROLE_IDS.agentAccessTokensContributor,
    display_name: 'Agent Access Tokens Contributor',
    description: 'Reads, creates, deletes and validates agent access tokens.',
    actions: [
      'Svc.Agent/agents/agentAccessTokens/read',
      'Svc.Agent/agents/agentAccessTokens/write',
      'Svc.Agent/agents/agentAccessTokens/delete',
      'Svc.Agent/agents/agentAccessTokens/validate',
    ],
  }),
  role({
    id: ROLE_IDS.analyticsReader,
    display_name: 'Analytics Reader',
    description: 'Runs analytics queries.',
    actions: [...ANALYTICS_ACTIONS],
  }),
];

export const ROLES_BY_ID: ReadonlyMap<string, RoleDefinition> = new Map(ROLE_DEFINITIONS.map((r) => [r.name, r]));

const patterns = new Map<string, RegExp>();
/** Azure-style action pattern: `*` matches any run of characters, including `/`; case-insensitive. */
export function actionMatches(pattern: string, action: string): boolean {
  let re = patterns.get(pattern);
  if (!re) {
    re = new RegExp(
      `^${pattern
        .split('*')
        .map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
        .join('.*')}$`,
      'i',
    );
    patterns.set(pattern, re);
  }
  return re.test(action);
}

/** Whether the role grants the action: some action pattern matches and no not-action does. */
export function roleGrants(role: RoleDefinition, action: string): boolean {
  return (
    role.permissions.actions.some((p) => actionMatches(p, action)) &&
    !role.permissions.not_actions.some((p) => actionMatches(p, action))
  );
}
