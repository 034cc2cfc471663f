# Cosmos DB for NoSQL, serverless, Entra ID only. The containers come from infra/containers.json, which the
# code writes from its own definitions (npm run infra:containers).
locals {
  cosmos_database = "agent-platform"
  containers      = { for c in jsondecode(file("${path.module}/../containers.json")) : c.name => c }
}

resource "azurerm_cosmosdb_account" "this" {
  name                          = local.names.cosmos
  location                      = var.location
  tags                          = local.tags
  resource_group_name           = azurerm_resource_group.this.name
  offer_type                    = "Standard"
  kind                          = "GlobalDocumentDB"
  local_authentication_disabled = true

  capabilities {
    name = "EnableServerless"
  }

  consistency_policy {
    consistency_level = "Session"
  }

  geo_location {
    location          = var.location
    failover_priority = 0
  }
}

resource "azurerm_cosmosdb_sql_database" "this" {
  name                = local.cosmos_database
  resource_group_name = azurerm_resource_group.this.name
  account_name        = azurerm_cosmosdb_account.this.name
}

resource "azurerm_cosmosdb_sql_container" "this" {
  for_each            = local.containers
  name                = each.key
  resource_group_name = azurerm_resource_group.this.name
  account_name        = azurerm_cosmosdb_account.this.name
  database_name       = azurerm_cosmosdb_sql_database.this.name
  partition_key_paths = [each.value.partitionKeyPath]
  default_ttl         = try(each.value.defaultTtl, null)

  indexing_policy {
    indexing_mode = each.value.indexingPolicy.indexingMode

    dynamic "included_path" {
      for_each = each.value.indexingPolicy.includedPaths
      content {
        path = included_path.value.path
      }
    }

    dynamic "excluded_path" {
      for_each = each.value.indexingPolicy.excludedPaths
      content {
        path = excluded_path.value.path
      }
    }

    dynamic "composite_index" {
      for_each = try(each.value.indexingPolicy.compositeIndexes, [])
      content {
        dynamic "index" {
          for_each = composite_index.value
          content {
            path  = index.value.path
            order = index.value.order
          }
        }
      }
    }
  }
}

# Cosmos DB Built-in Data Contributor on the data plane, for each app's identity.
resource "azurerm_cosmosdb_sql_role_assignment" "app" {
  for_each            = local.apps
  resource_group_name = azurerm_resource_group.this.name
  account_name        = azurerm_cosmosdb_account.this.name
  role_definition_id  = "${azurerm_cosmosdb_account.this.id}/sqlRoleDefinitions/00000000-0000-0000-0000-000000000002"
  principal_id        = azurerm_user_assigned_identity.app[each.key].principal_id
  scope               = azurerm_cosmosdb_account.this.id
}
