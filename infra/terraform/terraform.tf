# Providers. Data-plane calls use Entra ID: the storage account allows no shared keys.
terraform {
  required_version = ">= 1.9.0"
  required_providers {
    azurerm = {
      source  = "hashicorp/azurerm"
      version = ">= 4.50.0, < 5.0.0"
    }
    # The knowledge container's vector embedding policy, which azurerm does not model.
    azapi = {
      source  = "Azure/azapi"
      version = ">= 2.0.0, < 3.0.0"
    }
  }
}

provider "azurerm" {
  features {}
  storage_use_azuread = true
}
