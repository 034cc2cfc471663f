// Portal branding values: defaults overridden by valid Svc:Branding:* app configurations.
import { z } from 'zod';
import { defineRoute } from '../shared/http/route.js';
import { InstanceParams } from '../shared/schemas.js';
import { json } from '../shared/http/types.js';
import { BRANDING } from '../shared/providers/branding.js';

const Branding = z.object({
  company_name: z.string(),
  page_title: z.string(),
  logo_url: z.string(),
  primary_color: z.string(),
  primary_text_color: z.string(),
});

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
      const branding = await services.settings.derive('branding', async () => {
        // A value stored before the rules existed is not served: the default stands in for it.
        const values = await Promise.all(
          BRANDING.map(async ({ field, key, fallback, check }) => {
            const value = await services.settings.get(key);
            return [field, value !== undefined && check(value) === undefined ? value : fallback];
          }),
        );
        return Branding.parse(Object.fromEntries(values));
      });
      return json(200, branding);
    },
  }),
];
