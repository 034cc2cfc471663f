// Status of both APIs. No authentication.
import { z } from 'zod';
import { json } from '../shared/http/types.js';
import { defineRoute } from '../shared/http/route.js';
import { InstanceParams } from '../shared/schemas.js';
import { Readiness, readiness } from '../shared/health.js';
import type { Config } from '../shared/config.js';

/** What this module uses of the service (the hosts pass the whole of it). */
export interface StatusRoutesDeps {
  readonly config: Config;
}

const CoreStatus = z.object({ status: z.string(), name: z.string(), version: z.string(), instance_id: z.string() });

const status = (services: StatusRoutesDeps, name: string) =>
  json(200, { status: 'ready', name, version: services.config.version, instance_id: services.config.instanceId });

/** `/health/live` and `/health/ready` on one API: unauthenticated, cheap, for probes. */
const health = (api: 'core' | 'management') => [
  defineRoute({
    name: `health-live-${api}`,
    api,
    method: 'GET',
    path: '/health/live',
    summary: 'Liveness: the process answers',
    tag: 'Status',
    auth: 'none',
    errors: api,
    responses: { 200: { description: 'Alive', schema: z.object({ status: z.literal('live') }) } },
    handler: () => Promise.resolve(json(200, { status: 'live' })),
  }),
  defineRoute({
    name: `health-ready-${api}`,
    api,
    method: 'GET',
    path: '/health/ready',
    summary: 'Readiness: the store, blob storage, the queues and the identity provider keys answer (each within 2 s)',
    tag: 'Status',
    auth: 'none',
    errors: api,
    responses: {
      200: { description: 'Ready', schema: Readiness },
      503: { description: 'A dependency does not answer', schema: Readiness },
    },
    handler: async ({ services }) => {
      const r = await readiness(services);
      return r.status === 'ready' ? json(200, r) : json(503, r);
    },
  }),
];

export const routes = [
  ...health('core'),
  ...health('management'),
  defineRoute({
    name: 'status-core',
    api: 'core',
    method: 'GET',
    path: '/status',
    summary: 'Core API status',
    tag: 'Status',
    auth: 'none',
    errors: 'core',
    responses: { 200: { description: 'Service status', schema: CoreStatus } },
    handler: ({ services }) => Promise.resolve(status(services, 'CoreAPI')),
  }),
  defineRoute({
    name: 'status-core-instance',
    api: 'core',
    method: 'GET',
    path: '/instances/{instanceId}/status',
    summary: 'Core API status of an instance',
    tag: 'Status',
    auth: 'none',
    errors: 'core',
    params: InstanceParams,
    responses: { 200: { description: 'Service status', schema: CoreStatus } },
    handler: ({ services }) => Promise.resolve(status(services, 'CoreAPI')),
  }),
  defineRoute({
    name: 'status-management',
    api: 'management',
    method: 'GET',
    path: '/status',
    summary: 'Management API status',
    tag: 'Status',
    auth: 'none',
    errors: 'management',
    responses: { 200: { description: 'Service status', schema: CoreStatus } },
    handler: ({ services }) => Promise.resolve(status(services, 'ManagementAPI')),
  }),
];
