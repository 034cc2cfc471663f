# The realtime relay: WebSockets, which a Function App cannot hold, served by the standalone server (the
# Dockerfile's service target) in a Container App beside the Function Apps. It runs as the Core app's identity
# with the Core app's settings, serves the Core API and the relay on one port, and leaves the queues to the
# Core app. It scales to zero between calls. Build and push the image to the registry, then set relay_image.
resource "azurerm_container_registry" "this" {
  name                          = local.names.registry
  location                      = var.location
  resource_group_name           = azurerm_resource_group.this.name
  sku                           = "Basic"
  admin_enabled                 = false
  anonymous_pull_enabled        = false
  public_network_access_enabled = true
  tags                          = local.tags
}

resource "azurerm_role_assignment" "registry_pull" {
  scope                = azurerm_container_registry.this.id
  role_definition_name = "AcrPull"
  principal_id         = azurerm_user_assigned_identity.app["core"].principal_id
  principal_type       = "ServicePrincipal"
}

resource "azurerm_container_app_environment" "relay" {
  name                = local.names.relay_environment
  location            = var.location
  resource_group_name = azurerm_resource_group.this.name
  tags                = local.tags

  workload_profile {
    name                  = "Consumption"
    workload_profile_type = "Consumption"
  }
}

# A container app's host name is its name under its environment's default domain, known before it exists.
locals {
  relay_url = "wss://${local.names.relay}.${azurerm_container_app_environment.relay.default_domain}"
}

resource "azurerm_container_app" "relay" {
  name                         = local.names.relay
  container_app_environment_id = azurerm_container_app_environment.relay.id
  resource_group_name          = azurerm_resource_group.this.name
  revision_mode                = "Single"
  workload_profile_name        = "Consumption"
  tags                         = merge(local.tags, { "azd-service-name" = "relay" })

  identity {
    type         = "UserAssigned"
    identity_ids = [azurerm_user_assigned_identity.app["core"].id]
  }

  registry {
    server   = azurerm_container_registry.this.login_server
    identity = azurerm_user_assigned_identity.app["core"].id
  }

  # HTTP ingress carries WebSockets; only the Core API's port is exposed.
  ingress {
    external_enabled = true
    target_port      = 7071
    transport        = "http"
    traffic_weight {
      latest_revision = true
      percentage      = 100
    }
  }

  template {
    # A call holds its connection for minutes: scale on concurrent connections, to zero between calls.
    min_replicas = 0
    max_replicas = 10
    http_scale_rule {
      name                = "calls"
      concurrent_requests = "200"
    }

    container {
      name   = "relay"
      image  = var.relay_image
      cpu    = 0.5
      memory = "1Gi"

      dynamic "env" {
        for_each = merge(local.shared_settings, {
          SERVICE_APIS                              = "core"
          QUEUE_WORKERS                             = "false"
          AZURE_CLIENT_ID                           = azurerm_user_assigned_identity.app["core"].client_id
          AzureWebJobsStorage__clientId             = azurerm_user_assigned_identity.app["core"].client_id
          APPLICATIONINSIGHTS_AUTHENTICATION_STRING = "ClientId=${azurerm_user_assigned_identity.app["core"].client_id};Authorization=AAD"
        })
        content {
          name  = env.key
          value = env.value
        }
      }

      # The probe names a host the service answers to (it refuses other names in Host, ALLOWED_HOSTS).
      readiness_probe {
        transport = "HTTP"
        path      = "/health/ready"
        port      = 7071
        header {
          name  = "Host"
          value = "localhost"
        }
      }
    }
  }

  depends_on = [azurerm_role_assignment.registry_pull, azurerm_role_assignment.storage, azurerm_role_assignment.secrets_user, azurerm_role_assignment.metrics_publisher, azurerm_cosmosdb_sql_role_assignment.app]
}
