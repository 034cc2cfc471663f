// The infrastructure and the code agree, and the infrastructure deploys: containers come from one definition,
// every setting the code reads is set by both Bicep and Terraform, each Function App has its own Flex
// Consumption plan, resource names are valid for any environment name azd accepts, Key Vault references and
// telemetry work with the apps' identities, and access is identity-only.
// (Neither the Bicep compiler nor Terraform's providers can be installed here: Terraform is parsed with
// @cdktf/hcl2json, Bicep is read as text, and the naming expressions of both are evaluated.)
import { readdirSync, readFileSync } from 'node:fs';
import { parse } from '@cdktf/hcl2json';
import { beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_ONLY_SETTINGS, SETTING_NAMES } from '../../../shared/config-settings.js';
import { loadConfig } from '../../../shared/config.js';
import { containersForInfra } from '../../../shared/infra-containers.js';
import { QUEUE_HANDLERS } from '../../../functions/groups.js';
import { queueName } from '../../../shared/queues/handler.js';
import { DEPLOYED_NODE_MAJOR } from '../../../scripts/package.js';
import { evaluateExpression, evaluateTemplate, NAME_RULES, ruleFor, type Scope } from '../../support/infra-eval.js';

const read = (file: string) => readFileSync(file, 'utf8');
const mainBicep = read('infra/bicep/main.bicep');
const resourcesBicep = read('infra/bicep/resources.bicep');
/** One pattern from parts written on separate lines (a regular expression literal cannot be split). */
const pattern = (...parts: RegExp[]) => new RegExp(parts.map((p) => p.source).join(''));

/** All .tf files merged: resources by type and name, locals, outputs and variables. */
interface Terraform {
  resource: Record<string, Record<string, Record<string, unknown>[]>>;
  data: Record<string, Record<string, Record<string, unknown>[]>>;
  locals: Record<string, unknown>[];
  output: Record<string, unknown>;
  variable: Record<string, Record<string, unknown>[]>;
}
let terraform: Terraform;
let terraformText = '';

/** Names of the settings the service needs in Azure. */
const REQUIRED = SETTING_NAMES.filter((s) => !LOCAL_ONLY_SETTINGS.includes(s));
const HOST_SETTINGS = [
  'AzureWebJobsStorage__accountName',
  'AzureWebJobsStorage__credential',
  'AzureWebJobsStorage__clientId',
  'APPLICATIONINSIGHTS_CONNECTION_STRING',
];

/** Environment names azd accepts (letters, digits, - _ . ( ), 1 to 64), chosen to break naive naming. */
const ENVIRONMENT_NAMES = [
  'agent-dev',
  'Prod_EU_1',
  'team.platform-(blue)_2026-experiment-no1',
  'abc',
  'x',
  'E'.repeat(64),
  '(dev)',
  'release.',
  '-lead',
  'a--b',
];

beforeAll(async () => {
  const merged: Record<string, unknown> = {};
  for (const file of readdirSync('infra/terraform').filter((f) => f.endsWith('.tf'))) {
    const text = read(`infra/terraform/${file}`);
    terraformText += `${text}\n`;
    const parsed = (await parse(file, text)) as Record<string, unknown>;
    for (const [block, body] of Object.entries(parsed)) {
      // `locals` blocks come as a list per file; resources and data sources as maps of maps (one type may
      // appear in several files); outputs and variables as maps.
      if (Array.isArray(body))
        merged[block] = [...((merged[block] as unknown[] | undefined) ?? []), ...(body as unknown[])];
      else if (block === 'resource' || block === 'data') {
        const into = (merged[block] ??= {}) as Record<string, object>;
        for (const [type, named] of Object.entries(body as Record<string, object>))
          into[type] = { ...into[type], ...named };
      } else merged[block] = { ...(merged[block] as object), ...(body as object) };
    }
  }
  terraform = merged as unknown as Terraform;
});

const tfResource = (type: string, name = 'this') => terraform.resource[type]?.[name]?.[0] ?? {};
const tfLocals = (): Record<string, unknown> => Object.assign({}, ...terraform.locals) as Record<string, unknown>;
const normal = (key: string) => key.toLowerCase().replace(/_/g, '');

/** The names Bicep gives every resource for an environment, by key. */
function bicepNames(
  environmentName: string,
  subscription = '00000000-0000-0000-0000-000000000001',
  location = 'westeurope',
): Record<string, string> {
  const outer: Scope = { 'subscription().id': `/subscriptions/${subscription}`, environmentName, location };
  const token = evaluateExpression(/^var resourceToken = (.+)$/m.exec(mainBicep)?.[1] ?? '', outer);
  const group = evaluateTemplate(/^var resourceGroupName = '(.+)'$/m.exec(mainBicep)?.[1] ?? '', outer);
  const block = /^var names = \{\n([\s\S]*?)\n\}/m.exec(resourcesBicep)?.[1] ?? '';
  const names: Record<string, string> = { resourceGroup: group };
  for (const m of block.matchAll(/^\s*(\w+): '(.*)'$/gm))
    names[m[1] ?? ''] = evaluateTemplate(m[2] ?? '', { ...outer, resourceToken: token });
  return names;
}

/** The names Terraform gives every resource for an environment, by key. */
function terraformNames(
  environmentName: string,
  subscription = '00000000-0000-0000-0000-000000000001',
  location = 'westeurope',
): Record<string, string> {
  const scope: Scope = {
    'var.environment_name': environmentName,
    'var.location': location,
    'data.azurerm_client_config.current.subscription_id': subscription,
  };
  scope['local.resource_token'] = evaluateTemplate(String(tfLocals().resource_token), scope);
  return Object.fromEntries(
    Object.entries(tfLocals().names as Record<string, string>).map(([k, v]) => [k, evaluateTemplate(v, scope)]),
  );
}

describe('infrastructure', () => {
  it('containers.json is generated from the code (run npm run infra:containers after changing containers)', () => {
    expect(JSON.parse(read('infra/containers.json'))).toEqual(containersForInfra());
  });

  it('both flavours create the containers from containers.json with their partition keys, TTLs and indexes', () => {
    expect(resourcesBicep).toContain("var containers = loadJsonContent('../containers.json')");
    expect(resourcesBicep).toMatch(
      pattern(
        /for c in containers: \{[\s\S]*paths: \[c\.partitionKeyPath\]/,
        /[\s\S]*indexingPolicy: c\.indexingPolicy[\s\S]*defaultTtl: c\.defaultTtl/,
      ),
    );
    expect(String(tfLocals().all_containers)).toContain('jsondecode(file("${path.module}/../containers.json"))');
    const container = tfResource('azurerm_cosmosdb_sql_container');
    expect(container).toMatchObject({
      for_each: '${local.containers}',
      partition_key_paths: ['${each.value.partitionKeyPath}'],
      default_ttl: '${try(each.value.defaultTtl, null)}',
    });
    expect(JSON.stringify(container.indexing_policy)).toContain('composite_index');
  });

  it('both flavours give the knowledge container its vector policy and index, on an account with vector search', () => {
    const knowledge = (
      JSON.parse(read('infra/containers.json')) as {
        name: string;
        vectorEmbeddingPolicy?: unknown;
        indexingPolicy: { vectorIndexes?: unknown[] };
      }[]
    ).find((c) => c.name === 'knowledge');
    expect(knowledge?.vectorEmbeddingPolicy).toMatchObject({
      vectorEmbeddings: [{ path: '/vector', distanceFunction: 'cosine', dimensions: 1536 }],
    });
    expect(knowledge?.indexingPolicy.vectorIndexes).toEqual([{ path: '/vector', type: 'quantizedFlat' }]);
    expect(resourcesBicep).toContain(
      "contains(c, 'vectorEmbeddingPolicy') ? { vectorEmbeddingPolicy: c.vectorEmbeddingPolicy } : {}",
    );
    expect(resourcesBicep).toContain("{ name: 'EnableNoSQLVectorSearch' }");
    // azurerm does not model vector policies: those containers go through azapi, the others through azurerm.
    expect(String(tfLocals().containers)).toContain('if !contains(keys(c), "vectorEmbeddingPolicy")');
    expect(String(tfLocals().vector_containers)).toContain('if contains(keys(c), "vectorEmbeddingPolicy")');
    const vector = tfResource('azapi_resource', 'vector_container');
    expect(vector).toMatchObject({
      for_each: '${local.vector_containers}',
      parent_id: '${azurerm_cosmosdb_sql_database.this.id}',
    });
    expect(JSON.stringify(vector.body)).toContain('each.value.vectorEmbeddingPolicy');
    expect(JSON.stringify(tfResource('azurerm_cosmosdb_account').capabilities)).toContain('EnableNoSQLVectorSearch');
  });

  it('both flavours give the knowledge container its full-text policy and index, on a full-text search account', () => {
    const knowledge = (
      JSON.parse(read('infra/containers.json')) as {
        name: string;
        fullTextPolicy?: unknown;
        indexingPolicy: { fullTextIndexes?: unknown[] };
      }[]
    ).find((c) => c.name === 'knowledge');
    expect(knowledge?.fullTextPolicy).toEqual({
      defaultLanguage: 'en-US',
      fullTextPaths: [{ path: '/text', language: 'en-US' }],
    });
    expect(knowledge?.indexingPolicy.fullTextIndexes).toEqual([{ path: '/text' }]);
    expect(resourcesBicep).toContain("contains(c, 'fullTextPolicy') ? { fullTextPolicy: c.fullTextPolicy } : {}");
    expect(resourcesBicep).toContain("{ name: 'EnableNoSQLFullTextSearch' }");
    expect(JSON.stringify(tfResource('azapi_resource', 'vector_container').body)).toContain(
      'each.value.fullTextPolicy',
    );
    expect(JSON.stringify(tfResource('azurerm_cosmosdb_account').capabilities)).toContain('EnableNoSQLFullTextSearch');
  });

  it('gives every environment name azd accepts valid, unique resource names, the same way in both flavours', () => {
    const keys = Object.keys(bicepNames('agent-dev')).map(normal).sort();
    expect(Object.keys(terraformNames('agent-dev')).map(normal).sort()).toEqual(keys);
    for (const env of ENVIRONMENT_NAMES) {
      expect(env).toMatch(/^[a-zA-Z0-9-()_.]{1,64}$/);
      for (const [flavour, names] of [
        ['Bicep', bicepNames(env)],
        ['Terraform', terraformNames(env)],
      ] as const) {
        for (const [key, name] of Object.entries(names)) {
          const rule = ruleFor(key);
          expect(
            NAME_RULES[rule]?.(name),
            `${flavour} ${key} for environment "${env}": "${name}" breaks the ${rule} naming rule`,
          ).toBe(true);
        }
      }
    }
    // Unique per environment and per subscription: storage and function app names are global.
    for (const names of [bicepNames, terraformNames]) {
      const storage = ENVIRONMENT_NAMES.map((e) => names(e).storage);
      expect(new Set(storage).size).toBe(ENVIRONMENT_NAMES.length);
      expect(names('agent-dev', '00000000-0000-0000-0000-000000000002').storage).not.toBe(names('agent-dev').storage);
    }
  });

  it('names every resource from the names table, and tags every resource group with azd-env-name', () => {
    for (const key of Object.keys(bicepNames('x')).filter((k) => k !== 'resourceGroup'))
      expect(resourcesBicep, `names.${key} is used`).toContain(`names.${key}`);
    for (const key of Object.keys(terraformNames('x')))
      expect(terraformText, `local.names.${key} is used`).toContain(`local.names.${key}`);
    expect(mainBicep).toContain("var tags = { 'azd-env-name': environmentName }");
    expect(mainBicep).toMatch(
      pattern(
        /resource rg 'Microsoft\.Resources\/resourceGroups@[^']+' = \{/,
        /\s*name: resourceGroupName\s*location: location\s*tags: tags/,
      ),
    );
    expect(tfLocals().tags).toEqual({ 'azd-env-name': '${var.environment_name}' });
    // Every resource declaration that takes tags gets them.
    const declarations = [
      ...resourcesBicep.matchAll(
        /^resource (\w+) '([^']+)' = (?:\[\s*for [^:]+: )?(?:if \([^)]*\) )?\{\n([\s\S]*?)\n\s*\}\]?$/gm,
      ),
    ];
    const children = 'blobServices|queueServices|containers|queues|sqlDatabases|sqlRoleAssignments|eventSubscriptions';
    const untagged = new RegExp(`\\/(${children})|roleAssignments`);
    for (const [, name, type, body] of declarations) {
      if (untagged.test(type ?? '')) continue;
      expect(body, `${name} is tagged`).toMatch(/tags: (tags|union\(tags)/);
    }
  });

  it('gives each Function App its own Flex Consumption plan (one app per plan), in both flavours', () => {
    expect(resourcesBicep.match(/'Microsoft\.Web\/serverfarms@/g)).toHaveLength(1);
    expect(resourcesBicep).toMatch(
      pattern(
        /resource plans 'Microsoft\.Web\/serverfarms@[^']+' = \[\s*for app in apps: \{/,
        /[\s\S]*?sku: \{ tier: 'FlexConsumption', name: 'FC1' \}/,
      ),
    );
    expect(resourcesBicep).toContain('serverFarmId: plans[i].id');
    expect(Object.keys(terraform.resource.azurerm_service_plan ?? {})).toEqual(['app']);
    expect(tfResource('azurerm_service_plan', 'app')).toMatchObject({ for_each: '${local.apps}', sku_name: 'FC1' });
    expect(tfResource('azurerm_function_app_flex_consumption', 'app')).toMatchObject({
      service_plan_id: '${azurerm_service_plan.app[each.key].id}',
    });
  });

  it('sets every setting the code reads, in both flavours', () => {
    // The settings list's entries, one a line (a probe's header, inside a line, is not a setting).
    const bicepSettings = new Set(
      [...resourcesBicep.matchAll(/^\s*\{ name: '([A-Za-z_]+)', value:/gm)].map((m) => m[1] ?? ''),
    );
    const functions = tfResource('azurerm_function_app_flex_consumption', 'app');
    const perApp = [...String(functions.app_settings).matchAll(/^\s*([A-Za-z_]+)\s*=/gm)].map((m) => m[1] ?? '');
    const tfSettings = new Set([...Object.keys(tfLocals().shared_settings as Record<string, unknown>), ...perApp]);
    for (const name of [...REQUIRED, ...HOST_SETTINGS]) {
      expect(bicepSettings.has(name), `Bicep sets ${name}`).toBe(true);
      expect(tfSettings.has(name), `Terraform sets ${name}`).toBe(true);
    }
    // Nothing is set that the code does not read (the host's own settings aside).
    const known = new Set([...SETTING_NAMES, ...HOST_SETTINGS, 'APPLICATIONINSIGHTS_AUTHENTICATION_STRING']);
    expect([...bicepSettings].filter((s) => !known.has(s))).toEqual([]);
    expect([...tfSettings].filter((s) => !known.has(s))).toEqual([]);
    // The values the code would parse are valid.
    expect(() =>
      loadConfig({
        STORE: 'cosmos',
        COSMOS_ENDPOINT: 'https://x.documents.azure.com:443/',
        SERVICE_APIS: 'core',
        ASYNC_COMPLETIONS_QUEUE: 'async-completions',
        GRAPH_ENABLED: 'false',
        AUTH_ISSUER: 'https://i',
        AUTH_AUDIENCE: 'a',
        AUTH_JWKS_URI: 'https://k',
      }),
    ).not.toThrow();
  });

  it("resolves Key Vault references with each app's own identity", () => {
    expect(resourcesBicep).toContain('keyVaultReferenceIdentity: identities[i].id');
    expect(resourcesBicep).toMatch(/resource vaultRoles [\s\S]*?roleId\(roles\.keyVaultSecretsUser\)/);
    expect(tfResource('azurerm_function_app_flex_consumption', 'app')).toMatchObject({
      key_vault_reference_identity_id: '${azurerm_user_assigned_identity.app[each.key].id}',
    });
    expect(tfResource('azurerm_role_assignment', 'secrets_user')).toMatchObject({
      role_definition_name: 'Key Vault Secrets User',
      for_each: '${local.apps}',
    });
  });

  it("runs plugins in a session pool without network egress, which only the apps' identities may use", () => {
    const pool = {
      poolManagementType: 'Dynamic',
      containerType: 'PythonLTS',
      sessionNetworkConfiguration: { status: 'EgressDisabled' },
    };
    expect(resourcesBicep).toMatch(
      pattern(
        /resource sessionPool 'Microsoft\.App\/sessionPools@[\d-]+preview' = \{[\s\S]*?containerType: 'PythonLTS'/,
        /[\s\S]*?sessionNetworkConfiguration: \{ status: 'EgressDisabled' \}/,
      ),
    );
    expect(resourcesBicep).toMatch(
      pattern(
        /resource sessionRoles [\s\S]*?for \(app, i\) in apps/,
        /[\s\S]*?scope: sessionPool[\s\S]*?roleId\(roles\.sessionExecutor\)/,
      ),
    );
    expect(resourcesBicep).toContain("sessionExecutor: '0fb8eba5-a2bb-4abe-b1c1-49dfad359bb0'");
    const tfPool = tfResource('azapi_resource', 'session_pool');
    expect(tfPool).toMatchObject({
      type: expect.stringMatching(/^Microsoft\.App\/sessionPools@/) as string,
      body: { properties: pool },
    });
    expect(tfResource('azurerm_role_assignment', 'sessions')).toMatchObject({
      role_definition_name: 'Azure ContainerApps Session Executor',
      for_each: '${local.apps}',
      scope: '${azapi_resource.session_pool.id}',
    });
    expect(JSON.stringify(tfLocals().shared_settings)).toContain(
      'azapi_resource.session_pool.output.properties.poolManagementEndpoint',
    );
  });

  it('hosts the realtime relay in a Container App beside the Function Apps, in both flavours', () => {
    // The Core app's identity and settings, its image pulled with that identity, only the Core port exposed,
    // no queue workers (the Core app runs them), and the Function Apps name its wss:// address.
    expect(resourcesBicep).toMatch(
      pattern(
        /resource relay 'Microsoft\.App\/containerApps@[^']+' = \{/,
        /[\s\S]*?userAssignedIdentities: \{ '\$\{identities\[0\]\.id\}': \{\} \}/,
        /[\s\S]*?ingress: \{ external: true, targetPort: 7071, transport: 'http', allowInsecure: false \}/,
        /[\s\S]*?registries: \[\{ server: registry\.properties\.loginServer, identity: identities\[0\]\.id \}\]/,
        /[\s\S]*?env: settings\(identities\[0\]\.properties\.clientId, 'core', false, relayUrl,/,
      ),
    );
    expect(resourcesBicep).toMatch(
      /appSettings: settings\(identities\[i\]\.properties\.clientId, app\.api, true, relayUrl,/,
    );
    expect(resourcesBicep).toContain(
      "var relayUrl = 'wss://${names.relay}.${relayEnvironment.properties.defaultDomain}'",
    );
    expect(resourcesBicep).toMatch(/resource registryPull [\s\S]*?scope: registry[\s\S]*?roleId\(roles\.acrPull\)/);
    expect(resourcesBicep).toContain("acrPull: '7f951dda-4ed3-4680-a7ca-43fe172d538d'");
    expect(resourcesBicep).toContain("'azd-service-name': 'relay'");

    const app = tfResource('azurerm_container_app', 'relay');
    expect(app).toMatchObject({
      identity: [{ type: 'UserAssigned', identity_ids: ['${azurerm_user_assigned_identity.app["core"].id}'] }],
      registry: [
        {
          server: '${azurerm_container_registry.this.login_server}',
          identity: '${azurerm_user_assigned_identity.app["core"].id}',
        },
      ],
      ingress: [{ external_enabled: true, target_port: 7071, transport: 'http' }],
    });
    const env = JSON.stringify(app.template);
    expect(env).toContain('merge(local.shared_settings');
    expect(env).toMatch(/SERVICE_APIS +=  ?\\"core\\"/);
    expect(env).toMatch(/QUEUE_WORKERS +=  ?\\"false\\"/);
    const shared = tfLocals().shared_settings as Record<string, string>;
    expect(tfLocals().relay_url).toBe(
      'wss://${local.names.relay}.${azurerm_container_app_environment.relay.default_domain}',
    );
    expect(shared.REALTIME_RELAY_URL).toBe('${local.relay_url}');
    expect(shared.QUEUE_WORKERS).toBe('true');
    expect(tfResource('azurerm_role_assignment', 'registry_pull')).toMatchObject({
      role_definition_name: 'AcrPull',
      scope: '${azurerm_container_registry.this.id}',
    });
    // azd builds the image into the registry and keeps it across provisioning.
    expect(read('azure.yaml')).toMatch(
      /relay:\s+project: \.\s+language: docker\s+host: containerapp\s+docker:\s+path: Dockerfile\s+target: service/,
    );
    expect(read('infra/bicep/main.parameters.json')).toContain('"relayImage": { "value": "${SERVICE_RELAY_IMAGE_NAME=');
  });

  it('sends telemetry with identity auth: local auth off, the apps publish as themselves, the code signs in', () => {
    expect(resourcesBicep).toContain('DisableLocalAuth: true');
    expect(resourcesBicep).toMatch(
      /resource insightsRoles [\s\S]*?for \(app, i\) in apps[\s\S]*?roleId\(roles\.monitoringMetricsPublisher\)/,
    );
    expect(resourcesBicep).toContain(
      "{ name: 'APPLICATIONINSIGHTS_AUTHENTICATION_STRING', value: 'ClientId=${clientId};Authorization=AAD' }",
    );
    expect(resourcesBicep).toContain("{ name: 'AZURE_CLIENT_ID', value: clientId }");
    expect(tfResource('azurerm_application_insights')).toMatchObject({ local_authentication_disabled: true });
    expect(tfResource('azurerm_role_assignment', 'metrics_publisher')).toMatchObject({
      role_definition_name: 'Monitoring Metrics Publisher',
      for_each: '${local.apps}',
    });
    expect(String(tfResource('azurerm_function_app_flex_consumption', 'app').app_settings)).toContain(
      'ClientId=${azurerm_user_assigned_identity.app[each.key].client_id};Authorization=AAD',
    );
    // The exporters' credential: shared/telemetry/exporters.ts (test/unit/shared/telemetry/setup.test.ts).
    expect(read('shared/telemetry/exporters.ts')).toMatch(
      /\{ connectionString, credential: gate\.credentialFor\('monitor'/,
    );
  });

  it("offers what azd templates offer: the deployer's data roles, CORS origins, always-ready Core instances", () => {
    expect(mainBicep).toMatch(/param principalId string = ''/);
    for (const r of ['operatorStorageRoles', 'operatorVaultRole', 'operatorCosmosRole'])
      expect(resourcesBicep).toMatch(
        new RegExp(`resource ${r} [^\\n]*= (\\[\\s*for [^:]+: )?if \\(!empty\\(principalId\\)\\)`),
      );
    expect(resourcesBicep).toContain('operatorRoleIds = [roles.blobDataContributor, roles.queueDataContributor]');
    expect(resourcesBicep).toContain('cors: { allowedOrigins: browserOrigins }');
    expect(resourcesBicep).toContain(
      "alwaysReady: app.alwaysReady > 0 ? [{ name: 'http', instanceCount: app.alwaysReady }] : []",
    );
    const parameters = JSON.parse(read('infra/bicep/main.parameters.json')) as {
      parameters: Record<string, { value: unknown }>;
    };
    expect(parameters.parameters.principalId?.value).toBe('${AZURE_PRINCIPAL_ID}');
    expect(parameters.parameters.environmentName?.value).toBe('${AZURE_ENV_NAME}');
    // Every required parameter of main.bicep is given.
    for (const m of mainBicep.matchAll(/^param (\w+) \w+$/gm))
      expect(Object.keys(parameters.parameters), m[1]).toContain(m[1]);
    expect(Object.keys(terraform.resource.azurerm_role_assignment ?? {})).toContain('operator');
    expect(terraformText).toContain('"Storage Blob Data Contributor"');
    expect(terraformText).toContain('"Storage Queue Data Contributor"');
    expect(tfResource('azurerm_cosmosdb_sql_role_assignment', 'operator')).toMatchObject({
      count: '${var.principal_id == "" ? 0 : 1}',
    });
    expect(JSON.stringify(tfResource('azurerm_function_app_flex_consumption', 'app').site_config)).toContain(
      'local.browser_origins',
    );
    expect(JSON.stringify(tfResource('azurerm_function_app_flex_consumption', 'app').dynamic)).toContain(
      'always_ready',
    );
  });

  it("deploys a working portal: Core knows the Management app's URL, and Management allows the portal's origin", () => {
    for (const environment of ENVIRONMENT_NAMES) {
      const b = bicepNames(environment);
      const t = terraformNames(environment);
      const bicepScope: Scope = Object.fromEntries(Object.entries(b).map(([k, v]) => [`names.${k}`, v]));
      const bicep = {
        origin: evaluateTemplate(/^var portalOrigin = '(.+)'$/m.exec(resourcesBicep)?.[1] ?? '', bicepScope),
        management: evaluateTemplate(/^var managementUrl = '(.+)'$/m.exec(resourcesBicep)?.[1] ?? '', bicepScope),
      };
      const scope: Scope = Object.fromEntries(Object.entries(t).map(([k, v]) => [`local.names.${k}`, v]));
      const locals = tfLocals();
      const tf = {
        origin: evaluateTemplate(String(locals.portal_origin), scope),
        management: evaluateTemplate(String(locals.management_url), scope),
      };
      expect(bicep).toEqual({
        origin: `https://${b.appCore ?? ''}.azurewebsites.net`,
        management: `https://${b.appManagement ?? ''}.azurewebsites.net`,
      });
      // The resource tokens differ between the flavours (uniqueString, sha256); the shape is the same.
      expect(tf).toEqual({
        origin: `https://${t.app_core ?? ''}.azurewebsites.net`,
        management: `https://${t.app_management ?? ''}.azurewebsites.net`,
      });
    }
    // Both apps allow the portal's origin besides the ones given, and the setting says the same.
    expect(resourcesBicep).toContain('var browserOrigins = union(corsAllowedOrigins, [portalOrigin])');
    expect(resourcesBicep).toContain("{ name: 'MANAGEMENT_API_URL', value: managementUrl }");
    expect(resourcesBicep).toContain("{ name: 'CORS_ALLOWED_ORIGINS', value: join(origins, ',') }");
    expect(resourcesBicep).toMatch(
      pattern(
        /appSettings: settings\([^\n]*, browserOrigins, portalOrigin, managementUrl, /,
        /sessionPool\.properties\.poolManagementEndpoint\)/,
      ),
    );
    expect(tfLocals().browser_origins).toBe('${distinct(concat(var.cors_allowed_origins, [local.portal_origin]))}');
    const shared = tfLocals().shared_settings as Record<string, string>;
    expect(shared.MANAGEMENT_API_URL).toBe('${local.management_url}');
    expect(shared.CORS_ALLOWED_ORIGINS).toBe('${join(",", local.browser_origins)}');
  });

  it('names outputs like settings, the same in both flavours', () => {
    const bicepOutputs = [...mainBicep.matchAll(/^output ([A-Z_]+) /gm)].map((m) => m[1]).sort();
    const tfOutputs = Object.keys(terraform.output).sort();
    expect(bicepOutputs).toEqual(tfOutputs);
    for (const setting of [
      'INSTANCE_ID',
      'COSMOS_ENDPOINT',
      'COSMOS_DATABASE',
      'STORAGE_ACCOUNT_NAME',
      'APPLICATIONINSIGHTS_CONNECTION_STRING',
      'AUTH_ISSUER',
      'AUTH_AUDIENCE',
      'AUTH_JWKS_URI',
    ]) {
      expect(SETTING_NAMES).toContain(setting);
      expect(tfOutputs).toContain(setting);
    }
  });

  it('creates the blob containers and queues the code uses by default', () => {
    const config = loadConfig({});
    const names = [config.filesContainer, config.packages.container, config.packages.privateStore];
    // Every queue a handler reads, and the poison queue the Functions host moves its failures to.
    const queues = [
      ...new Set(
        QUEUE_HANDLERS.flatMap((h) => [
          queueName(config, h.queue),
          queueName(config, { of: h.queue.of, poison: true }),
        ]),
      ),
    ];
    expect(queues).toContain('webhook-deliveries');
    const tf = tfLocals();
    for (const n of names) {
      expect(resourcesBicep).toContain(`'${n}'`);
      expect(tf.blob_containers).toContain(n);
    }
    for (const q of queues) {
      expect(resourcesBicep).toContain(`name: '${q}'`);
      expect(tf.queues).toContain(q);
    }
  });

  it(
    "delivers the storage account's Blob created and deleted events to the pipeline-events queue with Event " +
      "Grid's own identity, in both flavours",
    () => {
      const config = loadConfig({});
      expect(resourcesBicep).toMatch(
        pattern(
          /resource blobEvents 'Microsoft\.EventGrid\/systemTopics@[^']+' = \{/,
          /[\s\S]*?identity: \{ type: 'SystemAssigned' \}/,
          /[\s\S]*?source: storage\.id\s*topicType: 'Microsoft\.Storage\.StorageAccounts'/,
        ),
      );
      expect(resourcesBicep).toContain(
        `properties: { resourceId: storage.id, queueName: '${config.knowledge.eventsQueue}'`,
      );
      expect(resourcesBicep).toContain(
        "includedEventTypes: ['Microsoft.Storage.BlobCreated', 'Microsoft.Storage.BlobDeleted']",
      );
      expect(resourcesBicep).toContain("'c6a89b2d-59bc-44d0-9896-0f6e12d7b80a'");
      expect(tfResource('azurerm_eventgrid_system_topic', 'blob_events')).toMatchObject({
        source_resource_id: '${azurerm_storage_account.this.id}',
        topic_type: 'Microsoft.Storage.StorageAccounts',
      });
      const subscription = tfResource('azurerm_eventgrid_system_topic_event_subscription', 'pipeline_events');
      expect(subscription).toMatchObject({
        included_event_types: ['Microsoft.Storage.BlobCreated', 'Microsoft.Storage.BlobDeleted'],
        event_delivery_schema: 'EventGridSchema',
      });
      expect(JSON.stringify(subscription.storage_queue_endpoint)).toContain(
        `"queue_name":"${config.knowledge.eventsQueue}"`,
      );
      expect(tfResource('azurerm_role_assignment', 'blob_events_sender')).toMatchObject({
        role_definition_name: 'Storage Queue Data Message Sender',
      });
    },
  );

  it('is identity-only: no shared keys, no local auth, Key Vault in RBAC mode', () => {
    expect(resourcesBicep).toContain('allowSharedKeyAccess: false');
    expect(resourcesBicep).toContain('disableLocalAuth: true');
    expect(resourcesBicep).toContain('DisableLocalAuth: true');
    expect(resourcesBicep).toContain('enableRbacAuthorization: true');
    expect(resourcesBicep).toContain("'${cosmos.id}/sqlRoleDefinitions/00000000-0000-0000-0000-000000000002'");
    expect(tfResource('azurerm_storage_account')).toMatchObject({ shared_access_key_enabled: false });
    expect(tfResource('azurerm_cosmosdb_account')).toMatchObject({ local_authentication_disabled: true });
    expect(tfResource('azurerm_key_vault')).toMatchObject({ rbac_authorization_enabled: true });
    expect(tfResource('azurerm_cosmosdb_sql_role_assignment', 'app')).toMatchObject({
      role_definition_id: expect.stringContaining('00000000-0000-0000-0000-000000000002') as string,
    });
    expect(Object.keys(terraform.resource.azurerm_role_assignment ?? {}).sort()).toEqual([
      'blob_events_sender',
      'metrics_publisher',
      'operator',
      'registry_pull',
      'secrets_user',
      'sessions',
      'storage',
    ]);
    expect(resourcesBicep).toContain('adminUserEnabled: false');
    expect(tfResource('azurerm_container_registry')).toMatchObject({
      admin_enabled: false,
      anonymous_pull_enabled: false,
    });
    expect(String(tfLocals().storage_roles)).toContain('Storage Blob Data Owner');
    for (const role of ['storageRoles', 'vaultRoles', 'insightsRoles', 'cosmosRoles'])
      expect(resourcesBicep).toContain(`resource ${role} `);
  });

  it(
    'runs two Function Apps on Flex Consumption, Node 22 (the Node the package is built for), each with its own ' +
      'user-assigned identity',
    () => {
      expect(DEPLOYED_NODE_MAJOR).toBe(22);
      expect(resourcesBicep).toContain("runtime: { name: 'node', version: '22' }");
      expect(resourcesBicep).toMatch(
        /resource identities 'Microsoft\.ManagedIdentity\/userAssignedIdentities@[^']+' = \[\s*for app in apps/,
      );
      expect(resourcesBicep).toContain("type: 'UserAssigned'");
      expect(tfResource('azurerm_function_app_flex_consumption', 'app')).toMatchObject({
        runtime_name: 'node',
        runtime_version: '22',
        for_each: '${local.apps}',
      });
      expect(Object.keys(tfLocals().apps as object).sort()).toEqual(['core', 'management']);
    },
  );

  it('types, describes and validates the Terraform variables', () => {
    for (const [name, [v]] of Object.entries(terraform.variable)) {
      expect(v?.type, `${name} type`).toBeDefined();
      expect(v?.description, `${name} description`).toBeDefined();
    }
    const validated = Object.entries(terraform.variable)
      .filter(([, [v]]) => v?.validation)
      .map(([n]) => n);
    expect(validated).toEqual(
      expect.arrayContaining([
        'environment_name',
        'instance_id',
        'auth_issuer',
        'auth_jwks_uri',
        'bootstrap_owner_ids',
        'core_always_ready_instances',
      ]),
    );
  });

  it('lists every setting in local.settings.sample.json; azd deploys the package to both apps from infra/bicep', () => {
    const sample = JSON.parse(read('local.settings.sample.json')) as { Values: Record<string, string> };
    for (const name of SETTING_NAMES) expect(Object.keys(sample.Values), name).toContain(name);
    const azure = read('azure.yaml');
    expect(azure).toMatch(/provider: bicep\s+path: infra\/bicep\s+module: main/);
    for (const service of ['core', 'management']) {
      expect(azure).toMatch(
        new RegExp(
          `${service}:\\s+project: \\.\\s+language: ts\\s+host: function\\s+dist: ` +
            `\\.azure-package\\s+remoteBuild: false`,
        ),
      );
    }
    expect(azure).toMatch(/prepackage:[\s\S]*run: npm ci && npm run package/);
    // remoteBuild: false needs node_modules in the package: azd refuses it when .funcignore excludes them.
    expect(read('.funcignore')).not.toMatch(/^node_modules/m);
  });
});
