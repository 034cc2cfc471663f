// Every resource type the Management API serves, in one list: each kind (data, providers/types/) with the
// rules the service runs around its writes (rules/ here). Assembled here so that type definitions
// import no feature, and features may import the type definitions.
import type { ResourceRules, ResourceType } from '../providers/resource-rules.js';
import type { ResourceKind } from '../providers/types/resource-type.js';
import { agentRules } from './rules/agent.js';
import { roleAssignmentRules } from './rules/authorization.js';
import {
  aiModelRules,
  apiEndpointRules,
  appConfigurationRules,
  dataPipelineRules,
  dataSourceRules,
  toolRules,
  workflowRules,
} from './rules/catalog.js';
import { agents } from '../providers/types/agent.js';
import { builtinTemplates } from '../providers/types/builtin-templates.js';
import { agentTemplates } from '../providers/types/template.js';
import { roleAssignments, roleDefinitions } from '../providers/types/authorization.js';
import {
  aiModels,
  apiEndpointConfigurations,
  appConfigurations,
  prompts,
  tools,
  workflows,
} from '../providers/types/catalog.js';
import { dataPipelineRuns, dataPipelines, dataSources } from '../providers/types/data-pipelines.js';

const served = <K extends ResourceKind>(kind: K, rules: ResourceRules<K> = {}): ResourceType => ({ ...kind, ...rules });

export const RESOURCE_TYPES: readonly ResourceType[] = [
  served(agents, agentRules),
  served(workflows, workflowRules),
  served(tools, toolRules),
  served(prompts),
  served(dataSources, dataSourceRules),
  served(dataPipelines, dataPipelineRules),
  served(dataPipelineRuns),
  served(aiModels, aiModelRules),
  served(appConfigurations, appConfigurationRules),
  served(apiEndpointConfigurations, apiEndpointRules),
  served(roleAssignments, roleAssignmentRules),
  served(roleDefinitions),
  served({ ...agentTemplates, seeds: builtinTemplates }),
];

/** The served type of a kind (its rules attached), for callers that write resources through the provider. */
export const servedType = (kind: ResourceKind): ResourceType =>
  RESOURCE_TYPES.find((t) => t.type === kind.type) ?? served(kind);
