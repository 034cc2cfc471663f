// The resource types the management portal has a section for, with their path in the Management API.
import { text, type Resource } from '../resource';

/** Resource types with their list in the Management API, as the portal's sections show them. */
export const TYPES = {
  agents: { title: 'Agents', path: 'Svc.Agent/agents', type: 'agent' },
  workflows: { title: 'Workflows', path: 'Svc.Agent/workflows', type: 'workflow' },
  tools: { title: 'Tools', path: 'Svc.Agent/tools', type: 'tool' },
  prompts: { title: 'Prompts', path: 'Svc.Prompt/prompts', type: 'prompt' },
  models: { title: 'AI models', path: 'Svc.AIModel/aiModels', type: 'ai-model' },
  endpoints: { title: 'API endpoints', path: 'Svc.Configuration/apiEndpointConfigurations', type: 'api-endpoint' },
  dataSources: { title: 'Data sources', path: 'Svc.DataSource/dataSources', type: 'data-source' },
  pipelines: { title: 'Data pipelines', path: 'Svc.DataPipeline/dataPipelines', type: 'data-pipeline' },
  roleAssignments: { title: 'Role assignments', path: 'Svc.Authorization/roleAssignments', type: 'role-assignment' },
  appConfig: {
    title: 'App configuration',
    path: 'Svc.Configuration/appConfigurations',
    type: 'appconfiguration-key-value',
  },
} as const;

export type Section = keyof typeof TYPES | 'packages' | 'analytics';

/** The path under /providers of a section's resource type. */
export type SectionPath = (typeof TYPES)[keyof typeof TYPES]['path'];

/** Resource types the portal reads by name: the sections' and those it picks from or follows. */
export type ResourcePath =
  SectionPath | 'Svc.Authorization/roleDefinitions' | 'Svc.Agent/agentTemplates' | 'Svc.DataPipeline/dataPipelineRuns';

/** A row's details, as lists give them: the description, else a display name other than the name. */
export const details = (r: Resource): string =>
  text(r.description) || (r.display_name !== r.name ? text(r.display_name) : '');
