# The two Function Apps (one package, one API each) and their user-assigned identities.
locals {
  suffix = substr(sha256("${var.resource_group_name}/${var.name_prefix}"), 0, 8)
  apps = {
    core       = { name = "${var.name_prefix}-core-${local.suffix}", api = "core", deployments = "deployments-core" }
    management = { name = "${var.name_prefix}-mgmt-${local.suffix}", api = "management", deployments = "deployments-management" }
  }
}

resource "azurerm_user_assigned_identity" "app" {
  for_each            = local.apps
  name                = "${var.name_prefix}-${each.key}-id"
  location            = var.location
  resource_group_name = var.resource_group_name
}
