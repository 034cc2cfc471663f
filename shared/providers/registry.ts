// Every resource type the Management API serves, in one list.
import type { ResourceType } from './resource-type.js';
import { agents } from './types/agent.js';
import { roleAssignments, roleDefinitions } from './types/authorization.js';
import {
  aiModels,
  apiEndpointConfigurations,
  appConfigurations,
  dataPipelineRuns,
  dataPipelines,
  dataSources,
  prompts,
  tools,
  workflows,
} from './types/catalog.js';

export const RESOURCE_TYPES: readonly ResourceType[] = [
  agents,
  workflows,
  tools,
  prompts,
  dataSources,
  dataPipelines,
  dataPipelineRuns,
  aiModels,
  appConfigurations,
  apiEndpointConfigurations,
  roleAssignments,
  roleDefinitions,
];

export { agents, aiModels, apiEndpointConfigurations, appConfigurations, prompts, roleAssignments, workflows };
