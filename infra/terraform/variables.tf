variable "resource_group_name" {
  type        = string
  description = "Existing resource group to deploy into."
}

variable "location" {
  type        = string
  description = "Azure region, e.g. westeurope."
}

variable "name_prefix" {
  type        = string
  description = "Prefix of every resource name: 3 to 12 lower-case letters and digits."
  validation {
    condition     = can(regex("^[a-z0-9]{3,12}$", var.name_prefix))
    error_message = "name_prefix must be 3 to 12 lower-case letters and digits."
  }
}

variable "instance_id" {
  type        = string
  description = "The instance id (a GUID) in every API path (INSTANCE_ID)."
  validation {
    condition     = can(regex("^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", var.instance_id))
    error_message = "instance_id must be a GUID."
  }
}

variable "auth_issuer" {
  type        = string
  description = "Entra ID issuer, e.g. https://login.microsoftonline.com/<tenant>/v2.0 (AUTH_ISSUER)."
  validation {
    condition     = startswith(var.auth_issuer, "https://")
    error_message = "auth_issuer must be an https URL."
  }
}

variable "auth_audience" {
  type        = string
  description = "The API app registration's app id URI or client id (AUTH_AUDIENCE)."
  validation {
    condition     = length(var.auth_audience) > 0
    error_message = "auth_audience must not be empty."
  }
}

variable "auth_jwks_uri" {
  type        = string
  description = "The tenant's JWKS URL (AUTH_JWKS_URI)."
  validation {
    condition     = startswith(var.auth_jwks_uri, "https://")
    error_message = "auth_jwks_uri must be an https URL."
  }
}

variable "bootstrap_owner_ids" {
  type        = list(string)
  description = "Principal ids made Owner at instance scope at startup (BOOTSTRAP_OWNER_IDS)."
  validation {
    condition     = length(var.bootstrap_owner_ids) > 0
    error_message = "Name at least one bootstrap owner, or nobody can administer the instance."
  }
}

variable "graph_enabled" {
  type        = bool
  description = "Search principals in Microsoft Graph (GRAPH_ENABLED); the identities then need Graph read permissions."
  default     = false
}

variable "package_store_public_url" {
  type        = string
  description = "The vendor's Public plugin package store: a Blob container URL with a read/list SAS; empty for none."
  default     = ""
  sensitive   = true
}

variable "maximum_instance_count" {
  type        = number
  description = "Maximum instances per Function App (Flex Consumption)."
  default     = 100
  validation {
    condition     = var.maximum_instance_count >= 1 && var.maximum_instance_count <= 1000
    error_message = "maximum_instance_count must be between 1 and 1000."
  }
}
