# Storage for the Functions host, uploaded files, plugin packages and stores, and the async queue.
# Shared keys are off: the apps use their identities with data roles.
locals {
  blob_containers = ["files", "plugin-packages", "plugin-store", "deployments-core", "deployments-management"]
  queues          = ["async-completions", "async-completions-poison", "webhook-deliveries", "webhook-deliveries-poison", "data-pipeline-runs", "data-pipeline-runs-poison", "evaluation-runs", "evaluation-runs-poison"]
  storage_roles   = ["Storage Blob Data Owner", "Storage Queue Data Contributor", "Storage Table Data Contributor"]
  storage_role_assignments = {
    for pair in setproduct(keys(local.apps), local.storage_roles) : "${pair[0]}-${pair[1]}" => { app = pair[0], role = pair[1] }
  }
}

resource "azurerm_storage_account" "this" {
  name                            = local.names.storage
  location                        = var.location
  tags                            = local.tags
  resource_group_name             = azurerm_resource_group.this.name
  account_tier                    = "Standard"
  account_replication_type        = "LRS"
  min_tls_version                 = "TLS1_2"
  shared_access_key_enabled       = false
  default_to_oauth_authentication = true
  allow_nested_items_to_be_public = false
}

resource "azurerm_storage_container" "this" {
  for_each           = toset(local.blob_containers)
  name               = each.key
  storage_account_id = azurerm_storage_account.this.id
}

resource "azurerm_storage_queue" "this" {
  for_each           = toset(local.queues)
  name               = each.key
  storage_account_id = azurerm_storage_account.this.id
}

resource "azurerm_role_assignment" "storage" {
  for_each             = local.storage_role_assignments
  scope                = azurerm_storage_account.this.id
  role_definition_name = each.value.role
  principal_id         = azurerm_user_assigned_identity.app[each.value.app].principal_id
  principal_type       = "ServicePrincipal"
}
