# Whoever deploys (principal_id): the data roles to seed data, fill the private plugin store and add model
# keys to the Key Vault. Nothing when principal_id is empty.
locals {
  operator_roles = var.principal_id == "" ? {} : {
    blob  = { scope = azurerm_storage_account.this.id, role = "Storage Blob Data Contributor" }
    queue = { scope = azurerm_storage_account.this.id, role = "Storage Queue Data Contributor" }
    vault = { scope = azurerm_key_vault.this.id, role = "Key Vault Secrets Officer" }
  }
}

resource "azurerm_role_assignment" "operator" {
  for_each             = local.operator_roles
  scope                = each.value.scope
  role_definition_name = each.value.role
  principal_id         = var.principal_id
  principal_type       = var.principal_type
}

resource "azurerm_cosmosdb_sql_role_assignment" "operator" {
  count               = var.principal_id == "" ? 0 : 1
  resource_group_name = azurerm_resource_group.this.name
  account_name        = azurerm_cosmosdb_account.this.name
  role_definition_id  = "${azurerm_cosmosdb_account.this.id}/sqlRoleDefinitions/00000000-0000-0000-0000-000000000002"
  principal_id        = var.principal_id
  scope               = azurerm_cosmosdb_account.this.id
}
