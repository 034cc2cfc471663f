// The agent platform in Azure, for `azd up` (or `az deployment sub create`): a resource group per
// environment and, in it, everything of resources.bicep. Every resource name derives from a token unique per
// subscription, environment and region, so any environment name azd accepts gives valid Azure names.
targetScope = 'subscription'

@minLength(1)
@maxLength(64)
@description('The azd environment name (letters, digits, - _ . ( )): names the resource group and tags every resource.')
param environmentName string

@minLength(1)
@description('Azure region of every resource (one with Flex Consumption).')
param location string

@description('Object id of whoever deploys (azd sets AZURE_PRINCIPAL_ID): given the data roles to seed data, fill the private plugin store and add model keys. Empty for none.')
param principalId string = ''

@allowed(['User', 'ServicePrincipal'])
@description('Whether principalId is a user or a service principal (a pipeline).')
param principalType string = 'User'

@description('The instance id (GUID) in every API path.')
param instanceId string

@description('Entra ID issuer, e.g. https://login.microsoftonline.com/<tenant>/v2.0')
param authIssuer string

@description('The API app registration\'s application id URI or client id (the token audience).')
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

@description('Comma-separated origins allowed to call both APIs from a browser (the portals); empty for none.')
param corsAllowedOrigins string = ''

@description('Always-ready instances of the Core API app: 0 scales from zero (cold starts), 1 or more keeps them warm (billed).')
@minValue(0)
@maxValue(20)
param coreAlwaysReadyInstances int = 0

@description('Maximum instances per Function App.')
@minValue(1)
@maxValue(1000)
param maximumInstanceCount int = 100

@description('The realtime relay\'s container image; azd deploy replaces this placeholder with the image it builds from the Dockerfile.')
param relayImage string = 'mcr.microsoft.com/k8se/quickstart:latest'

var tags = { 'azd-env-name': environmentName }
// 13 lower-case letters and digits: the one varying part of every resource name.
var resourceToken = toLower(uniqueString(subscription().id, environmentName, location))
// Dots become hyphens: a resource group name may not end with a dot.
var resourceGroupName = 'rg-${replace(environmentName, '.', '-')}'

resource rg 'Microsoft.Resources/resourceGroups@2024-03-01' = {
  name: resourceGroupName
  location: location
  tags: tags
}

module resources 'resources.bicep' = {
  name: 'resources'
  scope: rg
  params: {
    location: location
    tags: tags
    resourceToken: resourceToken
    principalId: principalId
    principalType: principalType
    instanceId: instanceId
    authIssuer: authIssuer
    authAudience: authAudience
    authJwksUri: authJwksUri
    bootstrapOwnerIds: bootstrapOwnerIds
    graphEnabled: graphEnabled
    packageStorePublicUrl: packageStorePublicUrl
    corsAllowedOrigins: empty(corsAllowedOrigins) ? [] : split(corsAllowedOrigins, ',')
    coreAlwaysReadyInstances: coreAlwaysReadyInstances
    maximumInstanceCount: maximumInstanceCount
    relayImage: relayImage
  }
}

// Named like the settings they feed (azd writes them to the environment's .env).
output AZURE_LOCATION string = location
output AZURE_TENANT_ID string = tenant().tenantId
output AZURE_RESOURCE_GROUP string = rg.name
output INSTANCE_ID string = instanceId
output AUTH_ISSUER string = authIssuer
output AUTH_AUDIENCE string = authAudience
output AUTH_JWKS_URI string = authJwksUri
output COSMOS_ENDPOINT string = resources.outputs.COSMOS_ENDPOINT
output COSMOS_DATABASE string = resources.outputs.COSMOS_DATABASE
output STORAGE_ACCOUNT_NAME string = resources.outputs.STORAGE_ACCOUNT_NAME
output APPLICATIONINSIGHTS_CONNECTION_STRING string = resources.outputs.APPLICATIONINSIGHTS_CONNECTION_STRING
output AZURE_KEY_VAULT_ENDPOINT string = resources.outputs.AZURE_KEY_VAULT_ENDPOINT
output AZURE_CLIENT_ID_CORE string = resources.outputs.AZURE_CLIENT_ID_CORE
output AZURE_CLIENT_ID_MANAGEMENT string = resources.outputs.AZURE_CLIENT_ID_MANAGEMENT
output CORE_API_URL string = resources.outputs.CORE_API_URL
output MANAGEMENT_API_URL string = resources.outputs.MANAGEMENT_API_URL
output REALTIME_RELAY_URL string = resources.outputs.REALTIME_RELAY_URL
output AZURE_CONTAINER_REGISTRY_ENDPOINT string = resources.outputs.AZURE_CONTAINER_REGISTRY_ENDPOINT
