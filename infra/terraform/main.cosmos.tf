# Cosmos DB for NoSQL, serverless, Entra ID only. The containers come from infra/containers.json, which the
# code writes from its own definitions (npm run infra:containers).
locals {
  cosmos_database = "agent-platform"
  all_containers  = jsondecode(file("${path.module}/../containers.json"))
  containers      = { for c in local.all_containers : c.name => c if !contains(keys(c), "vectorEmbeddingPolicy") }
  # Containers with a vector embedding policy (the knowledge index) are created through azapi.
  vector_containers = { for c in local.all_containers : c.name => c if contains(keys(c), "vectorEmbeddingPolicy") }
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

  # Vector and full-text search: the knowledge container's vector embedding policy, full-text policy and indexes.
  capabilities {
    name = "EnableNoSQLVectorSearch"
  }

  capabilities {
    name = "EnableNoSQLFullTextSearch"
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

resource "azapi_resource" "vector_container" {
  for_each  = local.vector_containers
  type      = "Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers@2024-11-15"
  name      = each.key
  parent_id = azurerm_cosmosdb_sql_database.this.id
  body = {
    properties = {
      resource = {
        id                    = each.key
        partitionKey          = { paths = [each.value.partitionKeyPath], kind = "Hash" }
        defaultTtl            = each.value.defaultTtl
        indexingPolicy        = each.value.indexingPolicy
        vectorEmbeddingPolicy = each.value.vectorEmbeddingPolicy
        fullTextPolicy        = each.value.fullTextPolicy
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
