# Key Vault (RBAC mode) for model endpoints' API keys. An API endpoint's api_key_secret_name names an app
# setting SVC_SECRET_<NAME>; set it to a Key Vault reference: @Microsoft.KeyVault(SecretUri=<vault>/secrets/<name>).
resource "azurerm_key_vault" "this" {
  name                       = local.names.vault
  location                   = var.location
  tags                       = local.tags
  resource_group_name        = azurerm_resource_group.this.name
  tenant_id                  = data.azurerm_client_config.current.tenant_id
  sku_name                   = "standard"
  rbac_authorization_enabled = true
  soft_delete_retention_days = 7
}

resource "azurerm_role_assignment" "secrets_user" {
  for_each             = local.apps
  scope                = azurerm_key_vault.this.id
  role_definition_name = "Key Vault Secrets User"
  principal_id         = azurerm_user_assigned_identity.app[each.key].principal_id
  principal_type       = "ServicePrincipal"
}
