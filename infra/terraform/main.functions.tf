# Two Function Apps, Node 22, from the same package, each on its own Flex Consumption plan (a Flex
# Consumption plan holds exactly one app). SERVICE_APIS selects the endpoint groups each registers; the Core
# app also runs the async worker. App settings are named exactly like the settings shared/config.ts reads.
resource "azurerm_service_plan" "app" {
  for_each            = local.apps
  name                = each.value.plan
  location            = var.location
  resource_group_name = azurerm_resource_group.this.name
  os_type             = "Linux"
  sku_name            = "FC1"
  tags                = local.tags
}

# The portals are served by the Core app and call the Management app from the browser: its origin is
# always allowed, and the Core app is told the Management app's URL. Both are the apps' default host names
# (an app created with Azure's randomized unique host names has others: then set cors_allowed_origins and
# MANAGEMENT_API_URL from the CORE_API_URL and MANAGEMENT_API_URL outputs).
locals {
  portal_origin   = "https://${local.names.app_core}.azurewebsites.net"
  management_url  = "https://${local.names.app_management}.azurewebsites.net"
  browser_origins = distinct(concat(var.cors_allowed_origins, [local.portal_origin]))
}

locals {
  shared_settings = {
    APPLICATIONINSIGHTS_CONNECTION_STRING = azurerm_application_insights.this.connection_string
    AzureWebJobsStorage__accountName      = azurerm_storage_account.this.name
    AzureWebJobsStorage__credential       = "managedidentity"
    INSTANCE_ID                           = var.instance_id
    STORE                                 = "cosmos"
    COSMOS_ENDPOINT                       = azurerm_cosmosdb_account.this.endpoint
    COSMOS_DATABASE                       = local.cosmos_database
    STORAGE_ACCOUNT_NAME                  = azurerm_storage_account.this.name
    AUTH_ISSUER                           = var.auth_issuer
    AUTH_AUDIENCE                         = var.auth_audience
    AUTH_JWKS_URI                         = var.auth_jwks_uri
    BOOTSTRAP_OWNER_IDS                   = join(",", var.bootstrap_owner_ids)
    INTERNAL_DOMAIN                       = "agent-platform.internal"
    GRAPH_ENABLED                         = tostring(var.graph_enabled)
    GRAPH_URL                             = "https://graph.microsoft.com"
    MAX_JSON_BODY_BYTES                   = "1048576"
    MAX_UPLOAD_BYTES                      = "20971520"
    USER_STORAGE_MAX_BYTES                = "1073741824"
    ATTACHMENT_MAX_TOKENS                 = "20000"
    MEMORY_MAX_BYTES                      = "262144"
    FILES_CONTAINER                       = "files"
    PACKAGES_CONTAINER                    = "plugin-packages"
    PACKAGE_STORE_PRIVATE_CONTAINER       = "plugin-store"
    PACKAGE_STORE_PUBLIC_URL              = var.package_store_public_url
    MAX_PACKAGE_BYTES                     = "52428800"
    MODEL_MAX_RETRIES                     = "2"
    MODEL_MAX_RESPONSE_BYTES              = "4194304"
    ALLOW_PRIVATE_NETWORK                 = "false"
    ASYNC_COMPLETIONS_QUEUE               = "async-completions"
    QUEUE_VISIBILITY_TIMEOUT_SECONDS      = "30"
    ASYNC_OPERATION_TIMEOUT_SECONDS       = "1800"
    WEBHOOKS_QUEUE                        = "webhook-deliveries"
    WEBHOOK_RETRY_BASE_SECONDS            = "5"
    PIPELINES_QUEUE                       = "data-pipeline-runs"
    PIPELINE_EVENTS_QUEUE                 = "pipeline-events"
    EVALUATIONS_QUEUE                     = "evaluation-runs"
    SEMANTIC_CACHE_TTL_SECONDS            = "3600"
    TOOL_MAX_ROUNDS                       = "5"
    TOOL_TIME_BUDGET_SECONDS              = "60"
    TOOL_RESULT_MAX_CHARS                 = "16000"
    PLUGIN_SESSIONS_ENDPOINT              = azapi_resource.session_pool.output.properties.poolManagementEndpoint
    # Where clients reach the realtime relay: its Container App (a Function App holds no WebSocket).
    REALTIME_RELAY_URL                = local.relay_url
    REALTIME_MAX_CALL_SECONDS         = "1800"
    QUEUE_WORKERS                     = "true"
    PLUGIN_TIMEOUT_SECONDS            = "30"
    PLUGIN_MEMORY_MB                  = "256"
    PLUGIN_WARM_INTERPRETERS          = "2"
    PLUGIN_CONCURRENCY                = "4"
    # Plugins run in the session pool; never on the Function App without network isolation.
    PLUGIN_SANDBOX_ALLOW_NETWORK      = "false"
    SERVICE_TOKEN_HOSTS               = ""
    PIPELINE_RUN_TIMEOUT_SECONDS      = "3600"
    PIPELINE_DOCUMENT_TIMEOUT_SECONDS = "300"
    EXTRACTION_TIMEOUT_SECONDS        = "60"
    KNOWLEDGE_RESCORING_DEPTH         = "15"
    LOG_LEVEL                         = "info"
    LOG_FORMAT                        = "json"
    # Empty: traces and metrics go to Application Insights only; set a collector's URL to export OTLP too.
    OTEL_EXPORTER_OTLP_ENDPOINT = ""
    OTEL_METRIC_EXPORT_INTERVAL = "60000"
    OTEL_SERVICE_NAME           = "agent-platform"
    # The portals (served by the Core app at /portal/): the browsers' origins, the Management app's URL as
    # browsers reach it, and Entra ID sign-in (empty: none).
    CORS_ALLOWED_ORIGINS   = join(",", local.browser_origins)
    CORE_API_URL           = local.portal_origin
    MANAGEMENT_API_URL     = local.management_url
    ALLOWED_HOSTS          = ""
    PORTAL_ENTRA_CLIENT_ID = var.portal_entra_client_id
    PORTAL_ENTRA_AUTHORITY = var.portal_entra_authority
    PORTAL_API_SCOPE       = var.portal_api_scope
  }
}

resource "azurerm_function_app_flex_consumption" "app" {
  for_each                          = local.apps
  name                              = each.value.name
  location                          = var.location
  resource_group_name               = azurerm_resource_group.this.name
  service_plan_id                   = azurerm_service_plan.app[each.key].id
  storage_container_type            = "blobContainer"
  storage_container_endpoint        = "${azurerm_storage_account.this.primary_blob_endpoint}${each.value.deployments}"
  storage_authentication_type       = "UserAssignedIdentity"
  storage_user_assigned_identity_id = azurerm_user_assigned_identity.app[each.key].id
  runtime_name                      = "node"
  runtime_version                   = "22"
  maximum_instance_count            = var.maximum_instance_count
  instance_memory_in_mb             = 2048
  tags                              = merge(local.tags, { "azd-service-name" = each.key })
  # Key Vault references in app settings resolve with this identity (the app has no system identity).
  key_vault_reference_identity_id = azurerm_user_assigned_identity.app[each.key].id

  identity {
    type         = "UserAssigned"
    identity_ids = [azurerm_user_assigned_identity.app[each.key].id]
  }

  dynamic "always_ready" {
    for_each = each.value.always_ready > 0 ? [each.value.always_ready] : []
    content {
      name           = "http"
      instance_count = always_ready.value
    }
  }

  site_config {
    minimum_tls_version = "1.2"
    cors {
      allowed_origins = local.browser_origins
    }
  }

  app_settings = merge(local.shared_settings, {
    SERVICE_APIS                              = each.value.api
    AZURE_CLIENT_ID                           = azurerm_user_assigned_identity.app[each.key].client_id
    AzureWebJobsStorage__clientId             = azurerm_user_assigned_identity.app[each.key].client_id
    APPLICATIONINSIGHTS_AUTHENTICATION_STRING = "ClientId=${azurerm_user_assigned_identity.app[each.key].client_id};Authorization=AAD"
  })

  depends_on = [azurerm_role_assignment.storage, azurerm_role_assignment.secrets_user, azurerm_role_assignment.metrics_publisher, azurerm_cosmosdb_sql_role_assignment.app, azurerm_storage_container.this]
}
