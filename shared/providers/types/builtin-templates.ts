// The agent templates every instance has: served beside the stored ones, read-only (copy one under another
// name to change it). Both create a prompt, a chat workflow and the agent, over a completion model the caller
// names; one adds a Web source indexed for a knowledge tool, the other an MCP server's tools.
import type { AnyResource } from './resource-type.js';
import { agentTemplates, type AgentTemplateDoc } from './template.js';

const id = (provider: string, segment: string, name: string) =>
  `/instances/{{instance_id}}/providers/${provider}/${segment}/${name}`;
const WORKFLOW = id('Svc.Agent', 'workflows', '{{agent_name}}-workflow');
const PROMPT = id('Svc.Prompt', 'prompts', '{{agent_name}}-prompt');

const common = {
  agent_name: {
    name: 'agent_name',
    type: 'string',
    description: 'The name of the new agent; its other resources are named after it',
  },
  model: {
    name: 'completion_model_object_id',
    type: 'resource-object-id',
    description: 'The completion model (an AI model resource) the agent answers with',
  },
} as const;

/** The prompt, workflow and agent both templates end with. */
const chatAgent = (tools: string[]) => [
  { type: 'prompt', name: '{{agent_name}}-prompt', prefix: '{{instructions}}' },
  {
    type: 'workflow',
    name: '{{agent_name}}-workflow',
    workflow_type: 'chat',
    workflow_host: 'builtin',
    main_ai_model_object_id: '{{completion_model_object_id}}',
    main_prompt_object_id: PROMPT,
  },
  {
    type: 'agent',
    name: '{{agent_name}}',
    display_name: '{{display_name}}',
    workflow_object_id: WORKFLOW,
    tool_object_ids: tools,
  },
];

const TEMPLATES: Pick<AgentTemplateDoc, 'name' | 'display_name' | 'description' | 'parameters' | 'resources'>[] = [
  {
    name: 'knowledge-assistant',
    display_name: 'Knowledge assistant over Web pages',
    description:
      'An agent that answers from Web pages: a Web data source, a pipeline that indexes the pages, a ' +
      'knowledge tool over the index, a prompt, a chat workflow and the agent. Run the pipeline (process) ' +
      'before asking.',
    parameters: [
      common.agent_name,
      { name: 'display_name', type: 'string', description: 'What users see', default_value: 'Knowledge assistant' },
      { name: 'source_urls', type: 'array', description: 'URL prefixes the pages may come from' },
      { name: 'page_urls', type: 'array', description: 'The pages to index' },
      common.model,
      {
        name: 'embedding_model_object_id',
        type: 'resource-object-id',
        description: 'The embedding model (an AI model resource) the pages are indexed with',
      },
      {
        name: 'instructions',
        type: 'string',
        description: 'The system prompt',
        default_value: 'Answer from the documents you are given, and say so when they do not hold the answer.',
      },
    ],
    resources: [
      { type: 'data-source', name: '{{agent_name}}-source', data_source_type: 'Web', urls: '{{source_urls}}' },
      {
        type: 'data-pipeline',
        name: '{{agent_name}}-pipeline',
        data_source_object_id: id('Svc.DataSource', 'dataSources', '{{agent_name}}-source'),
        source_paths: '{{page_urls}}',
        index_name: '{{agent_name}}',
        embedding_ai_model_object_id: '{{embedding_model_object_id}}',
      },
      {
        type: 'tool',
        name: '{{agent_name}}-knowledge',
        tool_type: 'knowledge',
        index_name: '{{agent_name}}',
        description: 'The indexed pages',
      },
      ...chatAgent([id('Svc.Agent', 'tools', '{{agent_name}}-knowledge')]),
    ],
  },
  {
    name: 'mcp-tool-agent',
    display_name: 'Tool-using agent over an MCP server',
    description:
      "An agent that calls a Model Context Protocol server's tools: an mcp tool allowing the tools named, a " +
      'prompt, a chat workflow and the agent.',
    parameters: [
      common.agent_name,
      { name: 'display_name', type: 'string', description: 'What users see', default_value: 'Tool-using agent' },
      { name: 'mcp_url', type: 'string', description: "The server's streamable HTTP endpoint" },
      { name: 'allowed_tools', type: 'array', description: "The server's tools the model may call" },
      common.model,
      {
        name: 'instructions',
        type: 'string',
        description: 'The system prompt',
        default_value: 'Use your tools to answer, and say which ones you used.',
      },
    ],
    resources: [
      {
        type: 'tool',
        name: '{{agent_name}}-tools',
        tool_type: 'mcp',
        url: '{{mcp_url}}',
        allowed_tools: '{{allowed_tools}}',
        authentication_type: 'None',
        description: 'The MCP server',
      },
      ...chatAgent([id('Svc.Agent', 'tools', '{{agent_name}}-tools')]),
    ],
  },
];

/** The built-in templates as stored resources of the instance. */
export function builtinTemplates(instanceId: string): AnyResource[] {
  return TEMPLATES.map((t) => ({
    ...t,
    id: t.name,
    pk: `${agentTemplates.provider}/${agentTemplates.segment}`,
    type: agentTemplates.type,
    object_id: `/instances/${instanceId}/providers/${agentTemplates.provider}/${agentTemplates.segment}/${t.name}`,
    built_in: true,
    created_on: '2026-11-26T00:00:00.000Z',
    created_by: 'system',
    updated_on: '2026-11-26T00:00:00.000Z',
    updated_by: 'system',
    deleted: false,
  }));
}
