// Evaluations of an agent: save, list, get and delete them, start a run (202; the queue runs it), read runs,
// and the prompts raters shared with a thumbs-down. An owner's tool: each needs write access to the agent.
import { z } from 'zod';
import { EvaluationBody, present, presentCandidate, RunMessage } from '../shared/evaluations/documents.js';
import { validationError } from '../shared/errors.js';
import { defineRoute } from '../shared/http/route.js';
import { InstanceParams } from '../shared/schemas.js';
import { json } from '../shared/http/types.js';
import { objectIdOf, ResourceName } from '../shared/providers/types/resource-type.js';
import { agents } from '../shared/providers/types/agent.js';
import { queueHandler, type QueueHandler } from '../shared/queues/handler.js';

const agentBase = '/instances/{instanceId}/providers/Svc.Agent/agents/{agentName}';
const base = `${agentBase}/evaluations`;
const AgentParams = InstanceParams.extend({ agentName: ResourceName });
const Params = AgentParams.extend({ name: ResourceName });
const RunParams = Params.extend({ runId: z.string().regex(/^[0-9a-f-]{36}$/i, 'must be a run id') });
const common = { api: 'management', tag: 'Svc.Agent/evaluations', auth: 'bearer', errors: 'management' } as const;
const ownerOf = ({ params }: { params: z.output<typeof AgentParams> }) => ({
  action: 'Svc.Agent/agents/write',
  scope: objectIdOf(params.instanceId, agents, params.agentName),
});

const Evaluation = z.record(z.string(), z.unknown()).meta({ id: 'Evaluation' });
const Run = z
  .object({
    type: z.literal('evaluation-run'),
    name: z.string(),
    object_id: z.string(),
    evaluation_object_id: z.string(),
    status: z.enum(['Pending', 'InProgress', 'Completed', 'Failed']),
    agent_version: z.number().int().nullable().describe('The version of the agent the cases ran against'),
    case_count: z.number().int(),
    results: z.array(
      z.object({
        user_prompt: z.string(),
        passed: z.boolean(),
        reason: z.string(),
        answer: z.string(),
        latency_ms: z.number(),
        total_tokens: z.number().int(),
        cost: z.number(),
      }),
    ),
    pass_rate: z.number().nullable().describe('Passed cases over all cases, 0 to 1, once completed'),
    total_cost: z.number(),
    total_tokens: z.number().int(),
    duration_ms: z.number().nullable(),
    error: z.string().optional(),
    created_on: z.string(),
    created_by: z.string(),
    started_on: z.string().nullable(),
    completed_on: z.string().nullable(),
  })
  .meta({ id: 'EvaluationRun' });
const Candidate = z
  .object({
    id: z.string(),
    agent_name: z.string(),
    user_prompt: z.string(),
    comments: z.string().nullable(),
    rated_on: z.string(),
  })
  .meta({ id: 'EvaluationCandidate' });

export const routes = [
  defineRoute({
    ...common,
    name: 'evaluations-list',
    method: 'GET',
    path: base,
    summary: "The agent's evaluations",
    params: AgentParams,
    permission: ownerOf,
    responses: { 200: { description: 'Evaluations with their cases', schema: z.array(Evaluation) } },
    handler: async ({ services, params }) =>
      json(200, (await services.evaluations.list(params.agentName)).map(present)),
  }),
  defineRoute({
    ...common,
    name: 'evaluations-upsert',
    method: 'POST',
    path: `${base}/{name}`,
    summary:
      'Create or replace an evaluation: cases with rule checks (contains, not_contains, regex, json_schema) ' +
      'and a judge rubric',
    params: Params,
    body: EvaluationBody,
    permission: ownerOf,
    responses: {
      200: { description: 'The evaluation object id', schema: z.object({ object_id: z.string() }) },
      404: { description: 'No such agent' },
    },
    handler: async ({ services, principal, params, body }) => {
      if (body.name !== params.name)
        throw validationError([{ field: 'name', message: `must equal the name in the path (${params.name})` }]);
      return json(200, await services.evaluations.save(services, principal, { agentName: params.agentName, body }));
    },
  }),
  defineRoute({
    ...common,
    name: 'evaluations-get',
    method: 'GET',
    path: `${base}/{name}`,
    summary: 'One evaluation with its cases',
    params: Params,
    permission: ownerOf,
    responses: { 200: { description: 'The evaluation', schema: Evaluation } },
    handler: async ({ services, params }) =>
      json(200, present(await services.evaluations.get(params.agentName, params.name))),
  }),
  defineRoute({
    ...common,
    name: 'evaluations-delete',
    method: 'DELETE',
    path: `${base}/{name}`,
    summary: 'Remove an evaluation and its runs',
    params: Params,
    permission: ownerOf,
    responses: { 200: { description: 'Deleted', schema: z.object({ object_id: z.string(), deleted: z.boolean() }) } },
    handler: async ({ services, params }) =>
      json(200, await services.evaluations.delete(params.agentName, params.name)),
  }),
  defineRoute({
    ...common,
    name: 'evaluations-run',
    method: 'POST',
    path: `${base}/{name}/run`,
    summary: 'Run the evaluation against the agent as it is now; poll the run by its object id',
    params: Params,
    permission: ownerOf,
    responses: {
      202: {
        description: "The run's object id (.../evaluations/{name}/runs/{runId})",
        schema: z.object({ object_id: z.string() }),
      },
    },
    handler: async ({ services, principal, params }) =>
      json(
        202,
        await services.evaluations.start(services, principal, { agentName: params.agentName, name: params.name }),
      ),
  }),
  defineRoute({
    ...common,
    name: 'evaluations-runs-list',
    method: 'GET',
    path: `${base}/{name}/runs`,
    summary: 'The runs of an evaluation, newest first',
    params: Params,
    permission: ownerOf,
    responses: { 200: { description: 'Runs', schema: z.array(Run) } },
    handler: async ({ services, params }) =>
      json(200, (await services.evaluations.listRuns(params.agentName, params.name)).map(present)),
  }),
  defineRoute({
    ...common,
    name: 'evaluations-runs-get',
    method: 'GET',
    path: `${base}/{name}/runs/{runId}`,
    summary:
      'One run: its status, the agent version it ran on, per-case verdicts with reasons, pass rate, cost and latency',
    params: RunParams,
    permission: ownerOf,
    responses: { 200: { description: 'The run', schema: Run } },
    handler: async ({ services, params }) =>
      json(200, present(await services.evaluations.getRun(params.agentName, params.name, params.runId))),
  }),
  defineRoute({
    ...common,
    name: 'evaluation-candidates-list',
    method: 'GET',
    path: `${agentBase}/evaluation-candidates`,
    summary:
      "Prompts raters shared with the agent's owner with a thumbs-down (never who rated): candidates for " +
      'evaluation cases',
    params: AgentParams,
    permission: ownerOf,
    responses: { 200: { description: 'Candidates, newest first', schema: z.array(Candidate) } },
    handler: async ({ services, params }) =>
      json(200, (await services.evaluations.listCandidates(params.agentName)).map(presentCandidate)),
  }),
  defineRoute({
    ...common,
    name: 'evaluation-candidates-delete',
    method: 'DELETE',
    path: `${agentBase}/evaluation-candidates/{candidateId}`,
    summary: 'Dismiss a candidate (made a case, or not wanted)',
    params: AgentParams.extend({ candidateId: z.string().regex(/^[0-9a-f]{32}$/, 'must be a candidate id') }),
    permission: ownerOf,
    responses: { 200: { description: 'Dismissed (empty body)' } },
    handler: async ({ services, params }) => {
      await services.evaluations.deleteCandidate(params.agentName, params.candidateId);
      return { status: 200 };
    },
  }),
];

export const queueHandlers: QueueHandler[] = [
  queueHandler({
    name: 'evaluations-run',
    queue: { of: 'evaluations' },
    message: RunMessage,
    handler: (m, delivery, s) => s.evaluations.execute(s, m.evaluation_run, delivery),
  }),
  queueHandler({
    name: 'evaluations-poison',
    queue: { of: 'evaluations', poison: true },
    message: RunMessage,
    handler: (m, _delivery, s) =>
      s.evaluations.fail(m.evaluation_run, 'The run could not be completed after several attempts'),
  }),
];
