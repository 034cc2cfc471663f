# The two Function Apps (one package, one API each) and their user-assigned identities.
locals {
  apps = {
    core       = { name = local.names.app_core, plan = local.names.plan_core, identity = local.names.identity_core, api = "core", deployments = "deployments-core", always_ready = var.core_always_ready_instances }
    management = { name = local.names.app_management, plan = local.names.plan_management, identity = local.names.identity_management, api = "management", deployments = "deployments-management", always_ready = 0 }
  }
}

resource "azurerm_user_assigned_identity" "app" {
  for_each            = local.apps
  name                = each.value.identity
  location            = var.location
  resource_group_name = azurerm_resource_group.this.name
  tags                = local.tags
}
