# Storage for the Functions host, uploaded files, plugin packages and stores, and the async queue.
# Shared keys are off: the apps use their identities with data roles.
locals {
  blob_containers = ["files", "plugin-packages", "plugin-store", "deployments-core", "deployments-management"]
  queues          = ["async-completions", "async-completions-poison", "webhook-deliveries", "webhook-deliveries-poison", "data-pipeline-runs", "data-pipeline-runs-poison", "evaluation-runs", "evaluation-runs-poison", "pipeline-events", "pipeline-events-poison"]
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

# Blob created and deleted events of the account, delivered by Event Grid to the pipeline-events queue (Event
# pipelines read from this account's containers), with the system topic's own identity, which may only send
# queue messages: the account takes no shared keys.
resource "azurerm_eventgrid_system_topic" "blob_events" {
  name                   = local.names.blob_events
  location               = var.location
  tags                   = local.tags
  resource_group_name    = azurerm_resource_group.this.name
  source_resource_id     = azurerm_storage_account.this.id
  topic_type             = "Microsoft.Storage.StorageAccounts"
  identity {
    type = "SystemAssigned"
  }
}

resource "azurerm_role_assignment" "blob_events_sender" {
  scope                = azurerm_storage_account.this.id
  role_definition_name = "Storage Queue Data Message Sender"
  principal_id         = azurerm_eventgrid_system_topic.blob_events.identity[0].principal_id
  principal_type       = "ServicePrincipal"
}

resource "azurerm_eventgrid_system_topic_event_subscription" "pipeline_events" {
  name                  = "pipeline-events"
  system_topic          = azurerm_eventgrid_system_topic.blob_events.name
  resource_group_name   = azurerm_resource_group.this.name
  event_delivery_schema = "EventGridSchema"
  included_event_types  = ["Microsoft.Storage.BlobCreated", "Microsoft.Storage.BlobDeleted"]
  delivery_identity {
    type = "SystemAssigned"
  }
  storage_queue_endpoint {
    storage_account_id                    = azurerm_storage_account.this.id
    queue_name                            = "pipeline-events"
    queue_message_time_to_live_in_seconds = 604800
  }
  depends_on = [azurerm_role_assignment.blob_events_sender, azurerm_storage_queue.this]
}
