# Application Insights on a Log Analytics workspace; ingestion with Entra ID only.
resource "azurerm_log_analytics_workspace" "this" {
  name                = local.names.logs
  location            = var.location
  tags                = local.tags
  resource_group_name = azurerm_resource_group.this.name
  sku                 = "PerGB2018"
  retention_in_days   = 30
}

resource "azurerm_application_insights" "this" {
  name                          = local.names.insights
  location                      = var.location
  tags                          = local.tags
  resource_group_name           = azurerm_resource_group.this.name
  application_type              = "web"
  workspace_id                  = azurerm_log_analytics_workspace.this.id
  local_authentication_disabled = true
}

resource "azurerm_role_assignment" "metrics_publisher" {
  for_each             = local.apps
  scope                = azurerm_application_insights.this.id
  role_definition_name = "Monitoring Metrics Publisher"
  principal_id         = azurerm_user_assigned_identity.app[each.key].principal_id
  principal_type       = "ServicePrincipal"
}
