// Everything in the environment's resource group: two Function Apps on Flex Consumption, each on its own plan
// (a Flex Consumption plan holds one app) with its own user-assigned identity; Cosmos DB for NoSQL
// (serverless); Storage; Application Insights on Log Analytics; Key Vault. Identity-only access everywhere.
// App settings and outputs are named exactly like the settings the code reads (shared/config.ts).
targetScope = 'resourceGroup'

param location string
param tags object
@description('13 lower-case letters and digits, unique per subscription, environment and region.')
param resourceToken string
param principalId string
param principalType string
param instanceId string
param authIssuer string
param authAudience string
param authJwksUri string
param bootstrapOwnerIds string
param graphEnabled bool
@secure()
param packageStorePublicUrl string
param corsAllowedOrigins array
@description('The portal\'s Entra ID app registration (client id); empty: no portal sign-in.')
param portalEntraClientId string = ''
@description('Entra ID authority for portal sign-in, e.g. https://login.microsoftonline.com/<tenant id>.')
param portalEntraAuthority string = ''
@description('The API scope the portal asks for, e.g. api://agent-platform/user_impersonation.')
param portalApiScope string = ''
param coreAlwaysReadyInstances int
param maximumInstanceCount int
@description('The realtime relay\'s image (azd deploy builds the Dockerfile\'s service target and sets it).')
param relayImage string

// Every name: a short type prefix and the token. Nothing of the environment name, whose characters and
// length Azure's naming rules do not all accept.
var names = {
  logs: 'log-${resourceToken}'
  insights: 'appi-${resourceToken}'
  storage: 'st${resourceToken}'
  cosmos: 'cosmos-${resourceToken}'
  vault: 'kv-${resourceToken}'
  identityCore: 'id-core-${resourceToken}'
  identityManagement: 'id-mgmt-${resourceToken}'
  planCore: 'plan-core-${resourceToken}'
  planManagement: 'plan-mgmt-${resourceToken}'
  appCore: 'func-core-${resourceToken}'
  appManagement: 'func-mgmt-${resourceToken}'
  sessionPool: 'ses-${resourceToken}'
  registry: 'cr${resourceToken}'
  relayEnvironment: 'cae-${resourceToken}'
  relay: 'ca-relay-${resourceToken}'
  blobEvents: 'evgt-${resourceToken}'
}
// The two Function Apps: one package, one API each (SERVICE_APIS); the Core app runs the async worker.
// The portals are served by the Core app and call the Management app from the browser: its origin is
// always allowed, and the Core app is told the Management app's URL. Both are the apps' default host names
// (an app created with Azure's randomized unique host names has others: then set MANAGEMENT_API_URL and
// corsAllowedOrigins to the CORE_API_URL and MANAGEMENT_API_URL outputs).
var portalOrigin = 'https://${names.appCore}.azurewebsites.net'
var managementUrl = 'https://${names.appManagement}.azurewebsites.net'
var browserOrigins = union(corsAllowedOrigins, [portalOrigin])

var apps = [
  { key: 'core', name: names.appCore, plan: names.planCore, identity: names.identityCore, api: 'core', deployments: 'deployments-core', alwaysReady: coreAlwaysReadyInstances }
  { key: 'management', name: names.appManagement, plan: names.planManagement, identity: names.identityManagement, api: 'management', deployments: 'deployments-management', alwaysReady: 0 }
]
var cosmosDatabase = 'agent-platform'
var containers = loadJsonContent('../containers.json')
var blobContainers = ['files', 'plugin-packages', 'plugin-store', 'deployments-core', 'deployments-management']

// One user-assigned identity per app, indexed like `apps`.
resource identities 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = [
  for app in apps: {
    name: app.identity
    location: location
    tags: tags
  }
]

resource logs 'Microsoft.OperationalInsights/workspaces@2023-09-01' = {
  name: names.logs
  location: location
  tags: tags
  properties: { sku: { name: 'PerGB2018' }, retentionInDays: 30 }
}

resource insights 'Microsoft.Insights/components@2020-02-02' = {
  name: names.insights
  location: location
  tags: tags
  kind: 'web'
  properties: { Application_Type: 'web', WorkspaceResourceId: logs.id, DisableLocalAuth: true }
}

resource storage 'Microsoft.Storage/storageAccounts@2023-05-01' = {
  name: names.storage
  location: location
  tags: tags
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

resource webhookQueue 'Microsoft.Storage/storageAccounts/queueServices/queues@2023-05-01' = {
  parent: queueService
  name: 'webhook-deliveries'
}

resource webhookPoisonQueue 'Microsoft.Storage/storageAccounts/queueServices/queues@2023-05-01' = {
  parent: queueService
  name: 'webhook-deliveries-poison'
}

resource pipelinesQueue 'Microsoft.Storage/storageAccounts/queueServices/queues@2023-05-01' = {
  parent: queueService
  name: 'data-pipeline-runs'
}

resource pipelinesPoisonQueue 'Microsoft.Storage/storageAccounts/queueServices/queues@2023-05-01' = {
  parent: queueService
  name: 'data-pipeline-runs-poison'
}

resource pipelineEventsQueue 'Microsoft.Storage/storageAccounts/queueServices/queues@2023-05-01' = {
  parent: queueService
  name: 'pipeline-events'
}

resource pipelineEventsPoisonQueue 'Microsoft.Storage/storageAccounts/queueServices/queues@2023-05-01' = {
  parent: queueService
  name: 'pipeline-events-poison'
}

// Blob created and deleted events of the storage account, delivered by Event Grid to the pipeline-events
// queue (Event pipelines read from this account's containers). Delivery uses the system topic's own
// identity, which may only send queue messages: the account takes no shared keys.
resource blobEvents 'Microsoft.EventGrid/systemTopics@2022-06-15' = {
  name: names.blobEvents
  location: location
  tags: tags
  identity: { type: 'SystemAssigned' }
  properties: {
    source: storage.id
    topicType: 'Microsoft.Storage.StorageAccounts'
  }
}

resource blobEventsSender 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(storage.id, blobEvents.id, 'queue-message-sender')
  scope: storage
  properties: {
    // Storage Queue Data Message Sender
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', 'c6a89b2d-59bc-44d0-9896-0f6e12d7b80a')
    principalId: blobEvents.identity.principalId
    principalType: 'ServicePrincipal'
  }
}

resource blobEventsToPipelines 'Microsoft.EventGrid/systemTopics/eventSubscriptions@2022-06-15' = {
  parent: blobEvents
  name: 'pipeline-events'
  dependsOn: [blobEventsSender, pipelineEventsQueue]
  properties: {
    eventDeliverySchema: 'EventGridSchema'
    filter: { includedEventTypes: ['Microsoft.Storage.BlobCreated', 'Microsoft.Storage.BlobDeleted'] }
    deliveryWithResourceIdentity: {
      identity: { type: 'SystemAssigned' }
      destination: {
        endpointType: 'StorageQueue'
        properties: { resourceId: storage.id, queueName: 'pipeline-events', queueMessageTimeToLiveInSeconds: 604800 }
      }
    }
  }
}

resource evaluationsQueue 'Microsoft.Storage/storageAccounts/queueServices/queues@2023-05-01' = {
  parent: queueService
  name: 'evaluation-runs'
}

resource evaluationsPoisonQueue 'Microsoft.Storage/storageAccounts/queueServices/queues@2023-05-01' = {
  parent: queueService
  name: 'evaluation-runs-poison'
}

resource cosmos 'Microsoft.DocumentDB/databaseAccounts@2024-11-15' = {
  name: names.cosmos
  location: location
  tags: tags
  kind: 'GlobalDocumentDB'
  properties: {
    databaseAccountOfferType: 'Standard'
    disableLocalAuth: true
    // Vector and full-text search: the knowledge container's vector embedding policy, full-text policy and indexes.
    capabilities: [{ name: 'EnableServerless' }, { name: 'EnableNoSQLVectorSearch' }, { name: 'EnableNoSQLFullTextSearch' }]
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
        contains(c, 'defaultTtl') ? { defaultTtl: c.defaultTtl } : {},
        contains(c, 'vectorEmbeddingPolicy') ? { vectorEmbeddingPolicy: c.vectorEmbeddingPolicy } : {},
        contains(c, 'fullTextPolicy') ? { fullTextPolicy: c.fullTextPolicy } : {}
      )
    }
  }
]

resource vault 'Microsoft.KeyVault/vaults@2023-07-01' = {
  name: names.vault
  location: location
  tags: tags
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
  blobDataContributor: 'ba92f5b4-2d11-453d-a403-e96b0029c9fe'
  queueDataContributor: '974c5e8b-45b9-4653-ba55-5f855dd0fb88'
  tableDataContributor: '0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3'
  keyVaultSecretsUser: '4633458b-17de-408a-b874-0445c86b69e6'
  keyVaultSecretsOfficer: 'b86a8fe4-44ce-4948-aee5-eccb2c155cd7'
  monitoringMetricsPublisher: '3913510d-42f4-4e42-8a64-420c390055eb'
  sessionExecutor: '0fb8eba5-a2bb-4abe-b1c1-49dfad359bb0'
  acrPull: '7f951dda-4ed3-4680-a7ca-43fe172d538d'
}
func roleId(id string) string => subscriptionResourceId('Microsoft.Authorization/roleDefinitions', id)

var storageRoleIds = [roles.blobDataOwner, roles.queueDataContributor, roles.tableDataContributor]

// Blob, queue and table data roles for each identity: entry i is app i / 3, role i % 3.
resource storageRoles 'Microsoft.Authorization/roleAssignments@2022-04-01' = [
  for i in range(0, length(apps) * length(storageRoleIds)): {
    name: guid(storage.id, identities[i / length(storageRoleIds)].id, storageRoleIds[i % length(storageRoleIds)])
    scope: storage
    properties: {
      principalId: identities[i / length(storageRoleIds)].properties.principalId
      principalType: 'ServicePrincipal'
      roleDefinitionId: roleId(storageRoleIds[i % length(storageRoleIds)])
    }
  }
]

// Key Vault references in app settings (SVC_SECRET_* model keys) resolve with the app's identity.
resource vaultRoles 'Microsoft.Authorization/roleAssignments@2022-04-01' = [
  for (app, i) in apps: {
    name: guid(vault.id, identities[i].id, roles.keyVaultSecretsUser)
    scope: vault
    properties: { principalId: identities[i].properties.principalId, principalType: 'ServicePrincipal', roleDefinitionId: roleId(roles.keyVaultSecretsUser) }
  }
]

// Application Insights takes Entra ID ingestion only: the exporter signs in as the app.
resource insightsRoles 'Microsoft.Authorization/roleAssignments@2022-04-01' = [
  for (app, i) in apps: {
    name: guid(insights.id, identities[i].id, roles.monitoringMetricsPublisher)
    scope: insights
    properties: { principalId: identities[i].properties.principalId, principalType: 'ServicePrincipal', roleDefinitionId: roleId(roles.monitoringMetricsPublisher) }
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

// The deploying user (principalId): data roles to seed data, fill the private plugin store and add model keys.
var operatorRoleIds = [roles.blobDataContributor, roles.queueDataContributor]

resource operatorStorageRoles 'Microsoft.Authorization/roleAssignments@2022-04-01' = [
  for r in operatorRoleIds: if (!empty(principalId)) {
    name: guid(storage.id, principalId, r)
    scope: storage
    properties: { principalId: principalId, principalType: principalType, roleDefinitionId: roleId(r) }
  }
]

resource operatorVaultRole 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (!empty(principalId)) {
  name: guid(vault.id, principalId, roles.keyVaultSecretsOfficer)
  scope: vault
  properties: { principalId: principalId, principalType: principalType, roleDefinitionId: roleId(roles.keyVaultSecretsOfficer) }
}

resource operatorCosmosRole 'Microsoft.DocumentDB/databaseAccounts/sqlRoleAssignments@2024-11-15' = if (!empty(principalId)) {
  parent: cosmos
  name: guid(cosmos.id, principalId, 'data-contributor')
  properties: {
    principalId: principalId
    roleDefinitionId: '${cosmos.id}/sqlRoleDefinitions/00000000-0000-0000-0000-000000000002'
    scope: cosmos.id
  }
}

// The plugin sandbox in Azure: a Python code interpreter session pool (Azure Container Apps dynamic
// sessions) with no network egress. Each plugin call runs in a session of its own (PLUGIN_SESSIONS_ENDPOINT).
resource sessionPool 'Microsoft.App/sessionPools@2024-02-02-preview' = {
  name: names.sessionPool
  location: location
  tags: tags
  properties: {
    poolManagementType: 'Dynamic'
    containerType: 'PythonLTS'
    scaleConfiguration: { maxConcurrentSessions: 100, readySessionInstances: 5 }
    dynamicPoolConfiguration: { executionType: 'Timed', cooldownPeriodInSeconds: 300 }
    sessionNetworkConfiguration: { status: 'EgressDisabled' }
  }
}

// Both apps run plugins: the Core app in completions, either app in a data pipeline's stages.
resource sessionRoles 'Microsoft.Authorization/roleAssignments@2022-04-01' = [
  for (app, i) in apps: {
    name: guid(sessionPool.id, identities[i].id, roles.sessionExecutor)
    scope: sessionPool
    properties: { principalId: identities[i].properties.principalId, principalType: 'ServicePrincipal', roleDefinitionId: roleId(roles.sessionExecutor) }
  }
]

// One Flex Consumption plan per app: a Flex Consumption plan holds exactly one app.
resource plans 'Microsoft.Web/serverfarms@2024-04-01' = [
  for app in apps: {
    name: app.plan
    location: location
    tags: tags
    kind: 'functionapp'
    sku: { tier: 'FlexConsumption', name: 'FC1' }
    properties: { reserved: true }
  }
]

// Settings both apps (and the relay) share; SERVICE_APIS, QUEUE_WORKERS and AZURE_CLIENT_ID differ per app.
func settings(clientId string, serviceApis string, queueWorkers bool, relayUrl string, connectionString string, storageName string, cosmosEndpoint string, instance string, issuer string, audience string, jwks string, owners string, graph bool, publicStore string, origins array, coreUrl string, managementUrl string, sessionsEndpoint string) array => [
  { name: 'AzureWebJobsStorage__accountName', value: storageName }
  { name: 'AzureWebJobsStorage__credential', value: 'managedidentity' }
  { name: 'AzureWebJobsStorage__clientId', value: clientId }
  { name: 'APPLICATIONINSIGHTS_CONNECTION_STRING', value: connectionString }
  { name: 'APPLICATIONINSIGHTS_AUTHENTICATION_STRING', value: 'ClientId=${clientId};Authorization=AAD' }
  { name: 'INSTANCE_ID', value: instance }
  { name: 'SERVICE_APIS', value: serviceApis }
  { name: 'QUEUE_WORKERS', value: string(queueWorkers) }
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
  { name: 'USER_STORAGE_MAX_BYTES', value: '1073741824' }
  { name: 'ATTACHMENT_MAX_TOKENS', value: '20000' }
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
  { name: 'WEBHOOKS_QUEUE', value: 'webhook-deliveries' }
  { name: 'WEBHOOK_RETRY_BASE_SECONDS', value: '5' }
  { name: 'PIPELINES_QUEUE', value: 'data-pipeline-runs' }
  { name: 'PIPELINE_EVENTS_QUEUE', value: 'pipeline-events' }
  { name: 'EVALUATIONS_QUEUE', value: 'evaluation-runs' }
  { name: 'SEMANTIC_CACHE_TTL_SECONDS', value: '3600' }
  { name: 'TOOL_MAX_ROUNDS', value: '5' }
  { name: 'TOOL_TIME_BUDGET_SECONDS', value: '60' }
  { name: 'TOOL_RESULT_MAX_CHARS', value: '16000' }
  { name: 'PLUGIN_SESSIONS_ENDPOINT', value: sessionsEndpoint }
  // Where clients reach the realtime relay: the relay's container app (a Function App holds no WebSocket).
  { name: 'REALTIME_RELAY_URL', value: relayUrl }
  { name: 'REALTIME_MAX_CALL_SECONDS', value: '1800' }
  { name: 'PLUGIN_TIMEOUT_SECONDS', value: '30' }
  { name: 'PLUGIN_MEMORY_MB', value: '256' }
  { name: 'PLUGIN_WARM_INTERPRETERS', value: '2' }
  { name: 'PLUGIN_CONCURRENCY', value: '4' }
  // Plugins run in the session pool; never on the Function App without network isolation.
  { name: 'PLUGIN_SANDBOX_ALLOW_NETWORK', value: 'false' }
  { name: 'SERVICE_TOKEN_HOSTS', value: '' }
  { name: 'PIPELINE_RUN_TIMEOUT_SECONDS', value: '3600' }
  { name: 'PIPELINE_DOCUMENT_TIMEOUT_SECONDS', value: '300' }
  { name: 'EXTRACTION_TIMEOUT_SECONDS', value: '60' }
  { name: 'KNOWLEDGE_RESCORING_DEPTH', value: '15' }
  { name: 'LOG_LEVEL', value: 'info' }
  { name: 'LOG_FORMAT', value: 'json' }
  // Empty: traces and metrics go to Application Insights only; set a collector's URL to export OTLP too.
  { name: 'OTEL_EXPORTER_OTLP_ENDPOINT', value: '' }
  { name: 'OTEL_METRIC_EXPORT_INTERVAL', value: '60000' }
  { name: 'OTEL_SERVICE_NAME', value: 'agent-platform' }
  // The portals (served by the Core app at /portal/): the browsers' origins, the Management app's URL as
  // browsers reach it, and Entra ID sign-in (empty: none).
  { name: 'CORS_ALLOWED_ORIGINS', value: join(origins, ',') }
  // The APIs' public URLs (agent cards and socket URLs are built from them), and further names requests may carry.
  { name: 'CORE_API_URL', value: coreUrl }
  { name: 'MANAGEMENT_API_URL', value: managementUrl }
  { name: 'ALLOWED_HOSTS', value: '' }
  { name: 'PORTAL_ENTRA_CLIENT_ID', value: portalEntraClientId }
  { name: 'PORTAL_ENTRA_AUTHORITY', value: portalEntraAuthority }
  { name: 'PORTAL_API_SCOPE', value: portalApiScope }
]

// The realtime relay: WebSockets, which a Function App cannot hold, served by the standalone server (the
// Dockerfile's service target) in a Container App beside the Function Apps. It runs as the Core app's
// identity with the Core app's settings, serves the Core API and the relay on one port, and leaves the queues
// to the Core app. It scales to zero between calls; azd deploy builds the image into the registry.
resource registry 'Microsoft.ContainerRegistry/registries@2023-07-01' = {
  name: names.registry
  location: location
  tags: tags
  sku: { name: 'Basic' }
  properties: { adminUserEnabled: false, anonymousPullEnabled: false }
}

resource registryPull 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(registry.id, identities[0].id, roles.acrPull)
  scope: registry
  properties: { principalId: identities[0].properties.principalId, principalType: 'ServicePrincipal', roleDefinitionId: roleId(roles.acrPull) }
}

resource relayEnvironment 'Microsoft.App/managedEnvironments@2024-03-01' = {
  name: names.relayEnvironment
  location: location
  tags: tags
  properties: { workloadProfiles: [{ name: 'Consumption', workloadProfileType: 'Consumption' }] }
}

// A container app's host name is its name under its environment's default domain, known before it exists.
var relayUrl = 'wss://${names.relay}.${relayEnvironment.properties.defaultDomain}'

resource relay 'Microsoft.App/containerApps@2024-03-01' = {
  name: names.relay
  location: location
  tags: union(tags, { 'azd-service-name': 'relay' })
  identity: { type: 'UserAssigned', userAssignedIdentities: { '${identities[0].id}': {} } }
  properties: {
    environmentId: relayEnvironment.id
    workloadProfileName: 'Consumption'
    configuration: {
      activeRevisionsMode: 'Single'
      // HTTP ingress carries WebSockets; only the Core API's port is exposed.
      ingress: { external: true, targetPort: 7071, transport: 'http', allowInsecure: false }
      registries: [{ server: registry.properties.loginServer, identity: identities[0].id }]
    }
    template: {
      containers: [
        {
          name: 'relay'
          image: relayImage
          resources: { cpu: json('0.5'), memory: '1Gi' }
          env: settings(identities[0].properties.clientId, 'core', false, relayUrl, insights.properties.ConnectionString, storage.name, cosmos.properties.documentEndpoint, instanceId, authIssuer, authAudience, authJwksUri, bootstrapOwnerIds, graphEnabled, packageStorePublicUrl, browserOrigins, portalOrigin, managementUrl, sessionPool.properties.poolManagementEndpoint)
          // The probe names a host the service answers to (it refuses other names in Host, ALLOWED_HOSTS).
          probes: [{ type: 'Readiness', httpGet: { path: '/health/ready', port: 7071, httpHeaders: [{ name: 'Host', value: 'localhost' }] }, periodSeconds: 10 }]
        }
      ]
      // A call holds its connection for minutes: scale on concurrent connections, to zero between calls.
      scale: { minReplicas: 0, maxReplicas: 10, rules: [{ name: 'calls', http: { metadata: { concurrentRequests: '200' } } }] }
    }
  }
  dependsOn: [registryPull, storageRoles, cosmosRoles, vaultRoles, insightsRoles, sessionRoles]
}

resource functionApps 'Microsoft.Web/sites@2024-04-01' = [
  for (app, i) in apps: {
    name: app.name
    location: location
    kind: 'functionapp,linux'
    tags: union(tags, { 'azd-service-name': app.key })
    identity: { type: 'UserAssigned', userAssignedIdentities: { '${identities[i].id}': {} } }
    properties: {
      serverFarmId: plans[i].id
      httpsOnly: true
      // Key Vault references in app settings resolve with this identity (the app has no system identity).
      keyVaultReferenceIdentity: identities[i].id
      functionAppConfig: {
        deployment: {
          storage: {
            type: 'blobContainer'
            value: '${storage.properties.primaryEndpoints.blob}${app.deployments}'
            authentication: { type: 'UserAssignedIdentity', userAssignedIdentityResourceId: identities[i].id }
          }
        }
        scaleAndConcurrency: {
          maximumInstanceCount: maximumInstanceCount
          instanceMemoryMB: 2048
          alwaysReady: app.alwaysReady > 0 ? [{ name: 'http', instanceCount: app.alwaysReady }] : []
        }
        runtime: { name: 'node', version: '22' }
      }
      siteConfig: {
        minTlsVersion: '1.2'
        cors: { allowedOrigins: browserOrigins }
        appSettings: settings(identities[i].properties.clientId, app.api, true, relayUrl, insights.properties.ConnectionString, storage.name, cosmos.properties.documentEndpoint, instanceId, authIssuer, authAudience, authJwksUri, bootstrapOwnerIds, graphEnabled, packageStorePublicUrl, browserOrigins, portalOrigin, managementUrl, sessionPool.properties.poolManagementEndpoint)
      }
    }
    dependsOn: [blobContainerResources, storageRoles, cosmosRoles, vaultRoles, insightsRoles, sessionRoles]
  }
]

output COSMOS_ENDPOINT string = cosmos.properties.documentEndpoint
output COSMOS_DATABASE string = cosmosDatabase
output STORAGE_ACCOUNT_NAME string = storage.name
output APPLICATIONINSIGHTS_CONNECTION_STRING string = insights.properties.ConnectionString
output AZURE_KEY_VAULT_ENDPOINT string = vault.properties.vaultUri
output AZURE_CLIENT_ID_CORE string = identities[0].properties.clientId
output AZURE_CLIENT_ID_MANAGEMENT string = identities[1].properties.clientId
output CORE_API_URL string = 'https://${functionApps[0].properties.defaultHostName}'
output MANAGEMENT_API_URL string = 'https://${functionApps[1].properties.defaultHostName}'
output REALTIME_RELAY_URL string = relayUrl
output AZURE_CONTAINER_REGISTRY_ENDPOINT string = registry.properties.loginServer
