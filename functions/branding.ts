// Portal branding values (spec 4.1, 2.7): defaults overridden by the Svc:Branding:* app configurations.
import { z } from 'zod';
import { defineRoute } from '../shared/http/route.js';
import { InstanceParams } from '../shared/http/schemas.js';
import { json } from '../shared/http/types.js';

const Branding = z.object({
  company_name: z.string(),
  page_title: z.string(),
  logo_url: z.string(),
  primary_color: z.string(),
  primary_text_color: z.string(),
});

/** Each branding field, its configuration key (CONTRACT.md section 8) and its default. */
const FIELDS = [
  ['company_name', 'Svc:Branding:CompanyName', 'Agent Platform'],
  ['page_title', 'Svc:Branding:PageTitle', 'Agent Platform'],
  ['logo_url', 'Svc:Branding:LogoUrl', ''],
  ['primary_color', 'Svc:Branding:PrimaryColor', '#0F6CBD'],
  ['primary_text_color', 'Svc:Branding:PrimaryTextColor', '#FFFFFF'],
] as const;

export const routes = [
  defineRoute({
    name: 'branding-get',
    api: 'core',
    method: 'GET',
    path: '/instances/{instanceId}/branding',
    summary: 'Portal branding values',
    tag: 'Branding',
    auth: 'any',
    errors: 'core',
    params: InstanceParams,
    responses: { 200: { description: 'Branding', schema: Branding } },
    handler: async ({ services }) => {
      const values = await Promise.all(FIELDS.map(async ([field, key, fallback]) => [field, (await services.settings.get(key)) ?? fallback]));
      return json(200, Object.fromEntries(values));
    },
  }),
];
