# Outputs named like the settings they feed (and like the Bicep flavour's).
output "AZURE_LOCATION" {
  value = var.location
}

output "AZURE_TENANT_ID" {
  value = data.azurerm_client_config.current.tenant_id
}

output "AZURE_RESOURCE_GROUP" {
  value = azurerm_resource_group.this.name
}

output "INSTANCE_ID" {
  value = var.instance_id
}

output "AUTH_ISSUER" {
  value = var.auth_issuer
}

output "AUTH_AUDIENCE" {
  value = var.auth_audience
}

output "AUTH_JWKS_URI" {
  value = var.auth_jwks_uri
}

output "COSMOS_ENDPOINT" {
  value = azurerm_cosmosdb_account.this.endpoint
}

output "COSMOS_DATABASE" {
  value = local.cosmos_database
}

output "STORAGE_ACCOUNT_NAME" {
  value = azurerm_storage_account.this.name
}

output "APPLICATIONINSIGHTS_CONNECTION_STRING" {
  value     = azurerm_application_insights.this.connection_string
  sensitive = true
}

output "AZURE_KEY_VAULT_ENDPOINT" {
  value = azurerm_key_vault.this.vault_uri
}

output "AZURE_CLIENT_ID_CORE" {
  value = azurerm_user_assigned_identity.app["core"].client_id
}

output "AZURE_CLIENT_ID_MANAGEMENT" {
  value = azurerm_user_assigned_identity.app["management"].client_id
}

output "CORE_API_URL" {
  value = "https://${azurerm_function_app_flex_consumption.app["core"].default_hostname}"
}

output "MANAGEMENT_API_URL" {
  value = "https://${azurerm_function_app_flex_consumption.app["management"].default_hostname}"
}

output "REALTIME_RELAY_URL" {
  value = local.relay_url
}

output "AZURE_CONTAINER_REGISTRY_ENDPOINT" {
  value = azurerm_container_registry.this.login_server
}
