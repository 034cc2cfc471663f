# Outputs named like the settings the code reads.
output "INSTANCE_ID" {
  value = var.instance_id
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

output "KEY_VAULT_URI" {
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
