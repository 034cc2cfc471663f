# The plugin sandbox in Azure: a Python code interpreter session pool (Azure Container Apps dynamic sessions)
# with no network egress. Each plugin call runs in a session of its own (PLUGIN_SESSIONS_ENDPOINT). azurerm
# does not model session pools: azapi creates it.
resource "azapi_resource" "session_pool" {
  type      = "Microsoft.App/sessionPools@2024-02-02-preview"
  name      = local.names.session_pool
  parent_id = azurerm_resource_group.this.id
  location  = var.location
  tags      = local.tags
  body = {
    properties = {
      poolManagementType          = "Dynamic"
      containerType               = "PythonLTS"
      scaleConfiguration          = { maxConcurrentSessions = 100, readySessionInstances = 5 }
      dynamicPoolConfiguration    = { executionType = "Timed", cooldownPeriodInSeconds = 300 }
      sessionNetworkConfiguration = { status = "EgressDisabled" }
    }
  }
  response_export_values = ["properties.poolManagementEndpoint"]
}

# Both apps run plugins: the Core app in completions, either app in a data pipeline's stages.
resource "azurerm_role_assignment" "sessions" {
  for_each             = local.apps
  scope                = azapi_resource.session_pool.id
  role_definition_name = "Azure ContainerApps Session Executor"
  principal_id         = azurerm_user_assigned_identity.app[each.key].principal_id
  principal_type       = "ServicePrincipal"
}
