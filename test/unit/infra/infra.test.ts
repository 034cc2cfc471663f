// The infrastructure and the code agree: containers come from one definition, every setting the code reads
// is set by both Bicep and Terraform, outputs are named like settings, and access is identity-only.
// (Neither the Bicep compiler nor Terraform's providers can be installed here: Terraform is parsed with
// @cdktf/hcl2json, Bicep is read as text.)
import { readdirSync, readFileSync } from 'node:fs';
import { parse } from '@cdktf/hcl2json';
import { beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_ONLY_SETTINGS, SETTING_NAMES, loadConfig } from '../../../shared/config.js';
import { containersForInfra } from '../../../shared/store/infra-containers.js';

const bicep = readFileSync('infra/bicep/main.bicep', 'utf8');
const read = (file: string) => readFileSync(file, 'utf8');

/** All .tf files merged: resources by type and name, locals, outputs and variables. */
interface Terraform {
  resource: Record<string, Record<string, Record<string, unknown>[]>>;
  locals: Record<string, unknown>[];
  output: Record<string, unknown>;
  variable: Record<string, Record<string, unknown>[]>;
}
let terraform: Terraform;

/** Names of the settings the service needs in Azure. */
const REQUIRED = SETTING_NAMES.filter((s) => !LOCAL_ONLY_SETTINGS.includes(s));
const HOST_SETTINGS = ['AzureWebJobsStorage__accountName', 'AzureWebJobsStorage__credential', 'AzureWebJobsStorage__clientId', 'APPLICATIONINSIGHTS_CONNECTION_STRING'];

beforeAll(async () => {
  const merged: Record<string, unknown> = {};
  for (const file of readdirSync('infra/terraform').filter((f) => f.endsWith('.tf'))) {
    const parsed = (await parse(file, read(`infra/terraform/${file}`))) as Record<string, unknown>;
    for (const [block, body] of Object.entries(parsed)) {
      // `locals` blocks come as a list per file; resources and data sources as maps of maps (one type may
      // appear in several files); outputs and variables as maps.
      if (Array.isArray(body)) merged[block] = [...((merged[block] as unknown[] | undefined) ?? []), ...(body as unknown[])];
      else if (block === 'resource' || block === 'data') {
        const into = (merged[block] ??= {}) as Record<string, object>;
        for (const [type, named] of Object.entries(body as Record<string, object>)) into[type] = { ...into[type], ...named };
      } else merged[block] = { ...(merged[block] as object), ...(body as object) };
    }
  }
  terraform = merged as unknown as Terraform;
});

const tfResource = (type: string, name = 'this') => terraform.resource[type]?.[name]?.[0] ?? {};
const tfLocals = (): Record<string, unknown> => Object.assign({}, ...terraform.locals) as Record<string, unknown>;

describe('infrastructure', () => {
  it('containers.json is generated from the code (run npm run infra:containers after changing containers)', () => {
    expect(JSON.parse(read('infra/containers.json'))).toEqual(containersForInfra());
  });

  it('both flavours create the containers from containers.json with their partition keys, TTLs and indexes', () => {
    expect(bicep).toContain("var containers = loadJsonContent('../containers.json')");
    expect(bicep).toMatch(/for c in containers: \{[\s\S]*paths: \[c\.partitionKeyPath\][\s\S]*indexingPolicy: c\.indexingPolicy[\s\S]*defaultTtl: c\.defaultTtl/);
    expect(String(tfLocals().containers)).toContain('jsondecode(file("${path.module}/../containers.json"))');
    const container = tfResource('azurerm_cosmosdb_sql_container');
    expect(container).toMatchObject({ for_each: '${local.containers}', partition_key_paths: ['${each.value.partitionKeyPath}'], default_ttl: '${try(each.value.defaultTtl, null)}' });
    expect(JSON.stringify(container.indexing_policy)).toContain('composite_index');
  });

  it('sets every setting the code reads, in both flavours', () => {
    const bicepSettings = new Set([...bicep.matchAll(/\{ name: '([A-Za-z_]+)', value:/g)].map((m) => m[1] ?? ''));
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
    expect(() => loadConfig({ STORE: 'cosmos', COSMOS_ENDPOINT: 'https://x.documents.azure.com:443/', SERVICE_APIS: 'core', ASYNC_COMPLETIONS_QUEUE: 'async-completions', GRAPH_ENABLED: 'false', AUTH_ISSUER: 'https://i', AUTH_AUDIENCE: 'a', AUTH_JWKS_URI: 'https://k' })).not.toThrow();
  });

  it('names outputs like settings, the same in both flavours', () => {
    const bicepOutputs = [...bicep.matchAll(/^output ([A-Z_]+) /gm)].map((m) => m[1]).sort();
    const tfOutputs = Object.keys(terraform.output).sort();
    expect(bicepOutputs).toEqual(tfOutputs);
    for (const setting of ['INSTANCE_ID', 'COSMOS_ENDPOINT', 'COSMOS_DATABASE', 'STORAGE_ACCOUNT_NAME', 'APPLICATIONINSIGHTS_CONNECTION_STRING']) {
      expect(SETTING_NAMES).toContain(setting);
      expect(tfOutputs).toContain(setting);
    }
  });

  it('creates the blob containers and queues the code uses by default', () => {
    const config = loadConfig({});
    const names = [config.filesContainer, config.packages.container, config.packages.privateStore];
    const queues = [config.asyncQueue, `${config.asyncQueue}-poison`];
    const tf = tfLocals();
    for (const n of names) {
      expect(bicep).toContain(`'${n}'`);
      expect(tf.blob_containers).toContain(n);
    }
    for (const q of queues) {
      expect(bicep).toContain(`name: '${q}'`);
      expect(tf.queues).toContain(q);
    }
  });

  it('is identity-only: no shared keys, no local auth, Key Vault in RBAC mode', () => {
    expect(bicep).toContain('allowSharedKeyAccess: false');
    expect(bicep).toContain('disableLocalAuth: true');
    expect(bicep).toContain('DisableLocalAuth: true');
    expect(bicep).toContain('enableRbacAuthorization: true');
    expect(bicep).toContain("'${cosmos.id}/sqlRoleDefinitions/00000000-0000-0000-0000-000000000002'");
    expect(tfResource('azurerm_storage_account')).toMatchObject({ shared_access_key_enabled: false });
    expect(tfResource('azurerm_cosmosdb_account')).toMatchObject({ local_authentication_disabled: true });
    expect(tfResource('azurerm_application_insights')).toMatchObject({ local_authentication_disabled: true });
    expect(tfResource('azurerm_key_vault')).toMatchObject({ rbac_authorization_enabled: true });
    expect(tfResource('azurerm_cosmosdb_sql_role_assignment', 'app')).toMatchObject({ role_definition_id: expect.stringContaining('00000000-0000-0000-0000-000000000002') as string });
    // Data roles for the identities: storage, Key Vault secrets, telemetry ingestion.
    expect(Object.keys(terraform.resource.azurerm_role_assignment ?? {}).sort()).toEqual(['metrics_publisher', 'secrets_user', 'storage']);
    expect(String(tfLocals().storage_roles)).toContain('Storage Blob Data Owner');
    for (const role of ['storageRoles', 'vaultRoles', 'insightsRoles', 'cosmosRoles']) expect(bicep).toContain(`resource ${role} `);
  });

  it('runs two Function Apps on Flex Consumption, Node 22, each with its own user-assigned identity', () => {
    expect(bicep).toContain("sku: { tier: 'FlexConsumption', name: 'FC1' }");
    expect(bicep).toContain("runtime: { name: 'node', version: '22' }");
    expect(bicep).toMatch(/resource identities 'Microsoft\.ManagedIdentity\/userAssignedIdentities@[^']+' = \[\s*for app in apps/);
    expect(bicep).toContain("type: 'UserAssigned'");
    expect(tfResource('azurerm_service_plan')).toMatchObject({ sku_name: 'FC1' });
    expect(tfResource('azurerm_function_app_flex_consumption', 'app')).toMatchObject({ runtime_name: 'node', runtime_version: '22', for_each: '${local.apps}' });
    expect(Object.keys(tfLocals().apps as object).sort()).toEqual(['core', 'management']);
  });

  it('types, describes and validates the Terraform variables', () => {
    for (const [name, [v]] of Object.entries(terraform.variable)) {
      expect(v?.type, `${name} type`).toBeDefined();
      expect(v?.description, `${name} description`).toBeDefined();
    }
    const validated = Object.entries(terraform.variable).filter(([, [v]]) => v?.validation).map(([n]) => n);
    expect(validated).toEqual(expect.arrayContaining(['name_prefix', 'instance_id', 'auth_issuer', 'auth_jwks_uri', 'bootstrap_owner_ids']));
  });

  it('lists every setting in local.settings.sample.json, and azd deploys both apps from infra/bicep', () => {
    const sample = JSON.parse(read('local.settings.sample.json')) as { Values: Record<string, string> };
    for (const name of SETTING_NAMES) expect(Object.keys(sample.Values), name).toContain(name);
    const azure = read('azure.yaml');
    expect(azure).toMatch(/provider: bicep\s+path: infra\/bicep/);
    expect(azure).toMatch(/core:\s+project: \.\s+language: ts\s+host: function/);
    expect(azure).toMatch(/management:\s+project: \.\s+language: ts\s+host: function/);
  });
});
