// Status of both APIs (spec 4.1 and 4.3). No authentication (CONTRACT.md section 2).
import { z } from 'zod';
import { json } from '../shared/http/types.js';
import { defineRoute } from '../shared/http/route.js';
import { InstanceParams } from '../shared/http/schemas.js';
import type { Services } from '../shared/services.js';

const CoreStatus = z.object({ status: z.string(), name: z.string(), version: z.string(), instance_id: z.string() });

const status = (services: Services, name: string) =>
  json(200, { status: 'ready', name, version: services.config.version, instance_id: services.config.instanceId });

export const routes = [
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
