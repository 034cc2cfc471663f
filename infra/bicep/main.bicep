// The agent platform in Azure: two Function Apps on the Flex Consumption plan (Core API with the async
// worker, Management API) from one package, Cosmos DB for NoSQL (serverless), Storage, Application Insights
// on Log Analytics and Key Vault, with identity-only access everywhere. App settings and outputs are named
// exactly like the settings the code reads (shared/config.ts).
targetScope = 'resourceGroup'

@description('Name prefix of every resource (letters and digits).')
@minLength(3)
@maxLength(12)
param namePrefix string

@description('Azure region.')
param location string = resourceGroup().location

@description('The instance id (GUID) in every API path.')
param instanceId string

@description('Entra ID issuer, e.g. https://login.microsoftonline.com/<tenant>/v2.0')
param authIssuer string

@description('The API app registration\'s app id URI or client id (the token audience).')
param authAudience string

@description('The tenant\'s JWKS URL, e.g. https://login.microsoftonline.com/<tenant>/discovery/v2.0/keys')
param authJwksUri string

@description('Comma-separated principal ids made Owner at instance scope at startup.')
param bootstrapOwnerIds string

@description('Search principals in Microsoft Graph (the identities need User.Read.All and GroupMember.Read.All).')
param graphEnabled bool = false

@description('The vendor\'s Public plugin package store: a Blob container URL with a read/list SAS; empty for none.')
@secure()
param packageStorePublicUrl string = ''

@description('Maximum instances per Function App.')
@minValue(1)
@maxValue(1000)
param maximumInstanceCount int = 100

var suffix = uniqueString(resourceGroup().id, namePrefix)
var names = {
  logs: '${namePrefix}-logs-${suffix}'
  insights: '${namePrefix}-ai-${suffix}'
  storage: toLower(take('${namePrefix}st${suffix}', 24))
  cosmos: toLower('${namePrefix}-cosmos-${suffix}')
  vault: take('${namePrefix}-kv-${suffix}', 24)
  plan: '${namePrefix}-plan-${suffix}'
}
// The two Function Apps: one package, one API each (SERVICE_APIS); the Core app runs the async worker.
var apps = [
  { key: 'core', name: '${namePrefix}-core-${suffix}', api: 'core', deployments: 'deployments-core' }
  { key: 'management', name: '${namePrefix}-mgmt-${suffix}', api: 'management', deployments: 'deployments-management' }
]
var cosmosDatabase = 'agent-platform'
var containers = loadJsonContent('../containers.json')
var blobContainers = ['files', 'plugin-packages', 'plugin-store', 'deployments-core', 'deployments-management']

// One user-assigned identity per app, indexed like `apps`.
resource identities 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = [
  for app in apps: {
    name: '${namePrefix}-${app.key}-id'
    location: location
  }
]

resource logs 'Microsoft.OperationalInsights/workspaces@2023-09-01' = {
  name: names.logs
  location: location
  properties: { sku: { name: 'PerGB2018' }, retentionInDays: 30 }
}

resource insights 'Microsoft.Insights/components@2020-02-02' = {
  name: names.insights
  location: location
  kind: 'web'
  properties: { Application_Type: 'web', WorkspaceResourceId: logs.id, DisableLocalAuth: true }
}

resource storage 'Microsoft.Storage/storageAccounts@2023-05-01' = {
  name: names.storage
  location: location
  kind: 'StorageV2'
  sku: { name: 'Standard_LRS' }
  properties: {
    allowSharedKeyAccess: false
    allowBlobPublicAccess: false
    minimumTlsVersion: 'TLS1_2'
    supportsHttpsTrafficOnly: true
  }
}

resource blobService 'Microsoft.Storage/storageAccounts/blobServices@2023-05-01' = {
  parent: storage
  name: 'default'
}

resource blobContainerResources 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' = [
  for c in blobContainers: {
    parent: blobService
    name: c
  }
]

resource queueService 'Microsoft.Storage/storageAccounts/queueServices@2023-05-01' = {
  parent: storage
  name: 'default'
}

resource asyncQueue 'Microsoft.Storage/storageAccounts/queueServices/queues@2023-05-01' = {
  parent: queueService
  name: 'async-completions'
}

resource asyncPoisonQueue 'Microsoft.Storage/storageAccounts/queueServices/queues@2023-05-01' = {
  parent: queueService
  name: 'async-completions-poison'
}

resource cosmos 'Microsoft.DocumentDB/databaseAccounts@2024-11-15' = {
  name: names.cosmos
  location: location
  kind: 'GlobalDocumentDB'
  properties: {
    databaseAccountOfferType: 'Standard'
    disableLocalAuth: true
    capabilities: [{ name: 'EnableServerless' }]
    locations: [{ locationName: location, failoverPriority: 0 }]
    consistencyPolicy: { defaultConsistencyLevel: 'Session' }
  }
}

resource cosmosDb 'Microsoft.DocumentDB/databaseAccounts/sqlDatabases@2024-11-15' = {
  parent: cosmos
  name: cosmosDatabase
  properties: { resource: { id: cosmosDatabase } }
}

// One container per entry of infra/containers.json: the code's own definitions.
resource cosmosContainers 'Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers@2024-11-15' = [
  for c in containers: {
    parent: cosmosDb
    name: c.name
    properties: {
      resource: union(
        {
          id: c.name
          partitionKey: { paths: [c.partitionKeyPath], kind: 'Hash' }
          indexingPolicy: c.indexingPolicy
        },
        contains(c, 'defaultTtl') ? { defaultTtl: c.defaultTtl } : {}
      )
    }
  }
]

resource vault 'Microsoft.KeyVault/vaults@2023-07-01' = {
  name: names.vault
  location: location
  properties: {
    tenantId: subscription().tenantId
    sku: { family: 'A', name: 'standard' }
    enableRbacAuthorization: true
    enableSoftDelete: true
    softDeleteRetentionInDays: 7
  }
}

// Role definitions (built in): data-plane access only, no keys anywhere.
var roles = {
  blobDataOwner: 'b7e6dc6d-f1e8-4753-8033-0f276bb0955b'
  queueDataContributor: '974c5e8b-45b9-4653-ba55-5f855dd0fb88'
  tableDataContributor: '0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3'
  keyVaultSecretsUser: '4633458b-17de-408a-b874-0445c86b69e6'
  monitoringMetricsPublisher: '3913510d-42f4-4e42-8a64-420c390055eb'
}

var storageRoleIds = [roles.blobDataOwner, roles.queueDataContributor, roles.tableDataContributor]

// Blob, queue and table data roles for each identity: entry i is app i / 3, role i % 3.
resource storageRoles 'Microsoft.Authorization/roleAssignments@2022-04-01' = [
  for i in range(0, length(apps) * length(storageRoleIds)): {
    name: guid(storage.id, identities[i / length(storageRoleIds)].id, storageRoleIds[i % length(storageRoleIds)])
    scope: storage
    properties: {
      principalId: identities[i / length(storageRoleIds)].properties.principalId
      principalType: 'ServicePrincipal'
      roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', storageRoleIds[i % length(storageRoleIds)])
    }
  }
]

resource vaultRoles 'Microsoft.Authorization/roleAssignments@2022-04-01' = [
  for (app, i) in apps: {
    name: guid(vault.id, identities[i].id, roles.keyVaultSecretsUser)
    scope: vault
    properties: { principalId: identities[i].properties.principalId, principalType: 'ServicePrincipal', roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.keyVaultSecretsUser) }
  }
]

resource insightsRoles 'Microsoft.Authorization/roleAssignments@2022-04-01' = [
  for (app, i) in apps: {
    name: guid(insights.id, identities[i].id, roles.monitoringMetricsPublisher)
    scope: insights
    properties: { principalId: identities[i].properties.principalId, principalType: 'ServicePrincipal', roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.monitoringMetricsPublisher) }
  }
]

// Cosmos DB Built-in Data Contributor, on the account's data plane.
resource cosmosRoles 'Microsoft.DocumentDB/databaseAccounts/sqlRoleAssignments@2024-11-15' = [
  for (app, i) in apps: {
    parent: cosmos
    name: guid(cosmos.id, identities[i].id, 'data-contributor')
    properties: {
      principalId: identities[i].properties.principalId
      roleDefinitionId: '${cosmos.id}/sqlRoleDefinitions/00000000-0000-0000-0000-000000000002'
      scope: cosmos.id
    }
  }
]

resource plan 'Microsoft.Web/serverfarms@2024-04-01' = {
  name: names.plan
  location: location
  kind: 'functionapp'
  sku: { tier: 'FlexConsumption', name: 'FC1' }
  properties: { reserved: true }
}

// Settings both apps share; SERVICE_APIS and AZURE_CLIENT_ID differ per app.
func settings(clientId string, serviceApis string, connectionString string, storageName string, cosmosEndpoint string, instance string, issuer string, audience string, jwks string, owners string, graph bool, publicStore string) array => [
  { name: 'AzureWebJobsStorage__accountName', value: storageName }
  { name: 'AzureWebJobsStorage__credential', value: 'managedidentity' }
  { name: 'AzureWebJobsStorage__clientId', value: clientId }
  { name: 'APPLICATIONINSIGHTS_CONNECTION_STRING', value: connectionString }
  { name: 'APPLICATIONINSIGHTS_AUTHENTICATION_STRING', value: 'ClientId=${clientId};Authorization=AAD' }
  { name: 'INSTANCE_ID', value: instance }
  { name: 'SERVICE_APIS', value: serviceApis }
  { name: 'STORE', value: 'cosmos' }
  { name: 'COSMOS_ENDPOINT', value: cosmosEndpoint }
  { name: 'COSMOS_DATABASE', value: 'agent-platform' }
  { name: 'STORAGE_ACCOUNT_NAME', value: storageName }
  { name: 'AZURE_CLIENT_ID', value: clientId }
  { name: 'AUTH_ISSUER', value: issuer }
  { name: 'AUTH_AUDIENCE', value: audience }
  { name: 'AUTH_JWKS_URI', value: jwks }
  { name: 'BOOTSTRAP_OWNER_IDS', value: owners }
  { name: 'INTERNAL_DOMAIN', value: 'agent-platform.internal' }
  { name: 'GRAPH_ENABLED', value: string(graph) }
  { name: 'GRAPH_URL', value: 'https://graph.microsoft.com' }
  { name: 'MAX_JSON_BODY_BYTES', value: '1048576' }
  { name: 'MAX_UPLOAD_BYTES', value: '20971520' }
  { name: 'MEMORY_MAX_BYTES', value: '262144' }
  { name: 'FILES_CONTAINER', value: 'files' }
  { name: 'PACKAGES_CONTAINER', value: 'plugin-packages' }
  { name: 'PACKAGE_STORE_PRIVATE_CONTAINER', value: 'plugin-store' }
  { name: 'PACKAGE_STORE_PUBLIC_URL', value: publicStore }
  { name: 'MAX_PACKAGE_BYTES', value: '52428800' }
  { name: 'MODEL_MAX_RETRIES', value: '2' }
  { name: 'MODEL_MAX_RESPONSE_BYTES', value: '4194304' }
  { name: 'ALLOW_PRIVATE_NETWORK', value: 'false' }
  { name: 'ASYNC_COMPLETIONS_QUEUE', value: 'async-completions' }
  { name: 'QUEUE_VISIBILITY_TIMEOUT_SECONDS', value: '30' }
  { name: 'ASYNC_OPERATION_TIMEOUT_SECONDS', value: '1800' }
]

resource functionApps 'Microsoft.Web/sites@2024-04-01' = [
  for (app, i) in apps: {
    name: app.name
    location: location
    kind: 'functionapp,linux'
    tags: { 'azd-service-name': app.key }
    identity: { type: 'UserAssigned', userAssignedIdentities: { '${identities[i].id}': {} } }
    properties: {
      serverFarmId: plan.id
      httpsOnly: true
      functionAppConfig: {
        deployment: {
          storage: {
            type: 'blobContainer'
            value: '${storage.properties.primaryEndpoints.blob}${app.deployments}'
            authentication: { type: 'UserAssignedIdentity', userAssignedIdentityResourceId: identities[i].id }
          }
        }
        scaleAndConcurrency: { maximumInstanceCount: maximumInstanceCount, instanceMemoryMB: 2048 }
        runtime: { name: 'node', version: '22' }
      }
      siteConfig: {
        minTlsVersion: '1.2'
        appSettings: settings(identities[i].properties.clientId, app.api, insights.properties.ConnectionString, storage.name, cosmos.properties.documentEndpoint, instanceId, authIssuer, authAudience, authJwksUri, bootstrapOwnerIds, graphEnabled, packageStorePublicUrl)
      }
    }
    dependsOn: [blobContainerResources, storageRoles, cosmosRoles]
  }
]

output INSTANCE_ID string = instanceId
output COSMOS_ENDPOINT string = cosmos.properties.documentEndpoint
output COSMOS_DATABASE string = cosmosDatabase
output STORAGE_ACCOUNT_NAME string = storage.name
output APPLICATIONINSIGHTS_CONNECTION_STRING string = insights.properties.ConnectionString
output KEY_VAULT_URI string = vault.properties.vaultUri
output AZURE_CLIENT_ID_CORE string = identities[0].properties.clientId
output AZURE_CLIENT_ID_MANAGEMENT string = identities[1].properties.clientId
output CORE_API_URL string = 'https://${functionApps[0].properties.defaultHostName}'
output MANAGEMENT_API_URL string = 'https://${functionApps[1].properties.defaultHostName}'
