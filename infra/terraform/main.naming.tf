# The resource group and every resource name. Names derive from a token unique per subscription, environment
# and region (13 lower-case letters and digits), never from the environment name itself, whose characters
# and length Azure's naming rules do not all accept. Tags carry the environment name (azd-env-name).
data "azurerm_client_config" "current" {}

locals {
  resource_token = substr(sha256("${data.azurerm_client_config.current.subscription_id}|${var.environment_name}|${var.location}"), 0, 13)
  tags           = { "azd-env-name" = var.environment_name }
  names = {
    resource_group      = "rg-${replace(var.environment_name, ".", "-")}"
    logs                = "log-${local.resource_token}"
    insights            = "appi-${local.resource_token}"
    storage             = "st${local.resource_token}"
    cosmos              = "cosmos-${local.resource_token}"
    vault               = "kv-${local.resource_token}"
    identity_core       = "id-core-${local.resource_token}"
    identity_management = "id-mgmt-${local.resource_token}"
    plan_core           = "plan-core-${local.resource_token}"
    plan_management     = "plan-mgmt-${local.resource_token}"
    app_core            = "func-core-${local.resource_token}"
    app_management      = "func-mgmt-${local.resource_token}"
    session_pool        = "ses-${local.resource_token}"
    registry            = "cr${local.resource_token}"
    relay_environment   = "cae-${local.resource_token}"
    blob_events         = "evgt-${local.resource_token}"
    relay               = "ca-relay-${local.resource_token}"
  }
}

resource "azurerm_resource_group" "this" {
  name     = local.names.resource_group
  location = var.location
  tags     = local.tags
}
