// Rules of the configuration resource types: links of the right kind, URLs the outbound rules allow,
// managed-identity tokens only for their audience, setting values that parse, secret settings rotated and
// masked, and what a purged pipeline indexed removed with it.
import { thresholdProblem } from '../../analytics/abuse.js';
import { BUDGET_SETTING, parseBudgets } from '../../completions/budget-definitions.js';
import { parseQuotaDefinitions, QUOTA_SETTING } from '../../completions/quotas.js';
import { forbidden, validationError } from '../../errors.js';
import { dropPipelineDocuments } from '../../knowledge/runs.js';
import { checkPlan, checkStages, planOf } from '../../knowledge/stages.js';
import { cronProblem } from '../../knowledge/cron.js';
import { blobUrlOf, serviceContainerProblem, sourceSettings } from '../../knowledge/sources.js';
import { allowedScopes, identityProblem } from '../../models/credentials.js';
import { resolvesOutside, savedUrlProblem, urlProblem } from '../../net/outbound.js';
import { BLOCKLIST_SETTING, compileBlocklist } from '../../matching/blocklist.js';
import { brandingProblem } from '../../providers/branding.js';
import type { ResourceRules } from '../../providers/resource-rules.js';
import { APP_CONFIG_PK, maskSecret, rotated } from '../../providers/settings.js';
import { dataPipelines, dataSources } from '../../providers/types/data-pipelines.js';
import {
  PLATFORM_MEMORY,
  type aiModels,
  type apiEndpointConfigurations,
  type appConfigurations,
  type tools,
  type workflows,
} from '../../providers/types/catalog.js';
import { partitionOf, type ResourceOf } from '../../providers/types/resource-type.js';
import { checkWorkflowLinks } from './agent-links.js';

export const workflowRules: ResourceRules<typeof workflows> = {
  validate: async (definition, { services }) => {
    if (definition.workflow_type === 'external')
      await services.plugins.lookup(definition.plugin_object_id, 'agent workflow', 'plugin_object_id');
    await checkWorkflowLinks(services, definition);
  },
};

/** A price counts in budgets only with its currency: prices per 1,000 tokens (no currency) are refused on save. */
export const aiModelRules: ResourceRules<typeof aiModels> = {
  validate: (d) => {
    const legacy = (['cost_per_1k_prompt_tokens', 'cost_per_1k_completion_tokens'] as const).find(
      (f) => d[f] !== undefined,
    );
    if (legacy)
      return Promise.reject(
        validationError([
          {
            field: legacy,
            message:
              `${legacy} has no currency, so no budget could count it: give prices as pricing ` +
              `{input_per_million, output_per_million, currency}`,
          },
        ]),
      );
    return Promise.resolve();
  },
};

export const toolRules: ResourceRules<typeof tools> = {
  computed: (d) => (d.tool_type === 'knowledge' ? { top_n: d.top_n ?? 5, retrieval: d.retrieval ?? 'always' } : {}),
  // A knowledge tool reads its index for every caller of its agents: naming one needs read on the pipeline that writes
  // it.
  authorizeWrite: async (d, existing, { services, principal }) => {
    if (d.tool_type !== 'knowledge' || d.index_name === undefined || d.index_name === existing?.index_name) return;
    const pipeline = await services.resourceCache.findBy(dataPipelines, 'index_name', d.index_name);
    if (
      pipeline &&
      !(await services.authorizer.can(principal, `${partitionOf(dataPipelines)}/read`, pipeline.object_id))
    ) {
      throw forbidden(
        `index_name: you may not read the data pipeline that writes ${d.index_name}, so a tool you write ` +
          `cannot search it`,
      );
    }
  },
  // The server URL follows the rules of user URLs; managed-identity tokens only for allowed scopes.
  validate: async (d, { services }) => {
    // A plugin tool's plugin, when installed, is a Python agent tool plugin that can run here.
    if (d.tool_type === 'plugin' && d.plugin_object_id !== undefined)
      await services.plugins.lookup(d.plugin_object_id, 'agent tool', 'plugin_object_id');
    if (d.url === undefined || d.url === PLATFORM_MEMORY) return;
    const problem = await savedUrlProblem(d.url, {
      policy: 'user',
      allowPrivateNetwork: services.config.allowPrivateNetwork,
    });
    if (problem) throw validationError([{ field: 'url', message: `url ${problem}` }]);
    if (d.authentication_type !== 'AzureIdentity') return;
    const scope = d.authentication_parameters?.scope;
    if (scope !== undefined && !allowedScopes(services.config).includes(scope)) {
      throw validationError([
        {
          field: 'authentication_parameters.scope',
          message: `scope must be one of ${allowedScopes(services.config).join(', ')}`,
        },
      ]);
    }
    const identity = identityProblem({ url: d.url, scope, gate: services.gate, config: services.config });
    if (identity) throw validationError([{ field: 'url', message: identity }]);
  },
};

/** A data source's URLs follow the rules of user URLs, names resolved on save too. */
export const dataSourceRules: ResourceRules<typeof dataSources> = {
  validate: async (d, { services }) => {
    const rules = { policy: 'user' as const, allowPrivateNetwork: services.config.allowPrivateNetwork };
    const urls: [string, string][] = [
      ...(d.urls ?? []).map((u, i): [string, string] => [`urls[${i}]`, u]),
      ...(d.account_url !== undefined ? [['account_url', d.account_url] satisfies [string, string]] : []),
    ];
    for (const [field, url] of urls) {
      const problem = await savedUrlProblem(url, rules);
      if (problem) throw validationError([{ field, message: `${field} ${problem}` }]);
    }
    // The account receives the managed identity's Storage token: only an https Azure Storage host may.
    const accountProblem =
      d.account_url !== undefined ? services.gate.urlProblem('storage', blobUrlOf(d.account_url)) : undefined;
    if (accountProblem) throw validationError([{ field: 'account_url', message: `account_url ${accountProblem}` }]);
    const own = serviceContainerProblem(services.config, sourceSettings(d as ResourceOf<typeof dataSources>));
    if (own) throw validationError([{ field: 'container', message: own }]);
  },
};

export const dataPipelineRules: ResourceRules<typeof dataPipelines> = {
  // Stages name built-in stage plugins, in order, with parameters they declare.
  validate: async (d, { services }) => {
    checkStages(d.stages);
    checkPlan(planOf(d));
    const cron = d.trigger_cron !== undefined ? cronProblem(d.trigger_cron) : undefined;
    if (cron) throw validationError([{ field: 'trigger_cron', message: cron }]);
    // Blob events come from storage: an Event pipeline reads an AzureBlob or AzureDataLake source.
    if (d.trigger_type === 'Event') {
      const source = await services.resourceCache.get(d.data_source_object_id, dataSources);
      if (source && source.data_source_type !== 'AzureBlob' && source.data_source_type !== 'AzureDataLake') {
        throw validationError([
          {
            field: 'trigger_type',
            message:
              `Event runs on Blob events: the data source must be AzureBlob or AzureDataLake, not ` +
              source.data_source_type,
          },
        ]);
      }
    }
  },
  // A purged pipeline takes what it indexed with it.
  afterPurge: (doc, { services }) => dropPipelineDocuments(services, doc),
};

/** Settings the service reads whose values have rules (branding, blocklist, quotas, abuse thresholds). */
function settingProblem(key: string, value: string): string | undefined {
  // Without case, as settings are read.
  const id = key.toLowerCase();
  const parse = {
    [BLOCKLIST_SETTING.toLowerCase()]: compileBlocklist,
    [QUOTA_SETTING.toLowerCase()]: parseQuotaDefinitions,
    [BUDGET_SETTING.toLowerCase()]: parseBudgets,
  }[id];
  const parsed = parse?.(value);
  return brandingProblem(key, value) ?? (typeof parsed === 'string' ? parsed : thresholdProblem(key, value));
}

export const appConfigurationRules: ResourceRules<typeof appConfigurations> = {
  validate: (d) => {
    const problem = settingProblem(d.key, d.value);
    return problem
      ? Promise.reject(validationError([{ field: 'value', message: `${d.key} ${problem}` }]))
      : Promise.resolve();
  },
  // A secret setting keeps the value a change replaced valid for a while (rotation), and is never shown.
  computed: (d, existing) => rotated(d, existing),
  present: maskSecret,
  afterChange: (doc, { services }) => {
    if (doc.pk === APP_CONFIG_PK) services.settings.invalidate(doc.name);
  },
};

export const apiEndpointRules: ResourceRules<typeof apiEndpointConfigurations> = {
  validate: async (d, { services, principal }) => {
    // Managed-identity tokens only for allowed scopes, and only to their audience's hosts.
    if (d.authentication_type === 'AzureIdentity') {
      const { scope } = d.authentication_parameters;
      const problem = identityProblem({ url: d.url, scope, gate: services.gate, config: services.config });
      if (problem) throw validationError([{ field: 'url', message: problem }]);
    }
    // Loopback and private addresses (local model servers) only from a principal who may assign roles at the
    // instance (an Owner): a Contributor could otherwise map the private network through the errors of calls.
    // The endpoint keeps what its saver was allowed: its calls connect under those rules.
    d.private_network = await pointsInside(d.url);
    if (
      d.private_network &&
      !services.config.allowPrivateNetwork &&
      !(await services.authorizer.can(
        principal,
        'Svc.Authorization/roleAssignments/write',
        `/instances/${services.config.instanceId}`,
      ))
    ) {
      throw validationError([
        {
          field: 'url',
          message:
            'url points to a loopback or private network address: only an Owner (who may assign roles at the ' +
            'instance) may save such an endpoint, or set ALLOW_PRIVATE_NETWORK=true to allow it (local ' +
            'development)',
        },
      ]);
    }
  },
};

/** Whether a URL names a loopback or private address, or a name that resolves to one now. */
async function pointsInside(url: string): Promise<boolean> {
  const strict = { policy: 'user' as const, allowPrivateNetwork: false };
  return (
    urlProblem(url.replace(/^http:/, 'https:'), strict) !== undefined ||
    (await resolvesOutside(new URL(url).hostname, strict))
  );
}
