// Analytics query: Analytics Reader only; api-version=2024-02-16.
import { z } from 'zod';
import { runAnalytics } from '../shared/analytics/query.js';
import { AnalyticsRequest } from '../shared/analytics/request.js';
import { AnalyticsResponse } from '../shared/analytics/schemas.js';
import { defineRoute } from '../shared/http/route.js';
import { ApiVersionQuery, InstanceParams } from '../shared/schemas.js';
import { json } from '../shared/http/types.js';

export const routes = [
  defineRoute({
    name: 'analytics-query',
    api: 'management',
    method: 'POST',
    path: '/instances/{instanceId}/providers/Svc.Analytics/analytics/query',
    summary:
      'Run an analytics query (request types 0-17, and 100-104 for charge-back: cost by cost center, agent, ' +
      'user and model, and budget status); needs the Analytics Reader role',
    tag: 'Svc.Analytics',
    auth: 'bearer',
    errors: 'management',
    params: InstanceParams,
    query: ApiVersionQuery,
    body: AnalyticsRequest,
    permission: ({ params }) => ({ action: 'Svc.Analytics/analytics/read', scope: `/instances/${params.instanceId}` }),
    responses: {
      200: {
        description: 'Action result whose resource is the AnalyticsResponse',
        schema: z.object({
          object_id: z.string(),
          is_success: z.boolean(),
          resource: AnalyticsResponse,
        }),
      },
    },
    handler: async ({ services, principal, body }) => json(200, await runAnalytics(services, principal, body)),
  }),
];
