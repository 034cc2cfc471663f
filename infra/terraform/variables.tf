variable "environment_name" {
  type        = string
  description = "The environment name (letters, digits, - _ . ( ), as azd accepts): names the resource group and tags every resource."
  validation {
    condition     = can(regex("^[a-zA-Z0-9-()_.]{1,64}$", var.environment_name))
    error_message = "environment_name must be 1 to 64 letters, digits, hyphens, underscores, periods or parentheses."
  }
}

variable "location" {
  type        = string
  description = "Azure region of every resource (one with Flex Consumption), e.g. westeurope."
}

variable "principal_id" {
  type        = string
  description = "Object id of whoever deploys: given the data roles to seed data, fill the private plugin store and add model keys. Empty for none."
  default     = ""
}

variable "principal_type" {
  type        = string
  description = "Whether principal_id is a User or a ServicePrincipal (a pipeline)."
  default     = "User"
  validation {
    condition     = contains(["User", "ServicePrincipal"], var.principal_type)
    error_message = "principal_type must be User or ServicePrincipal."
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
  description = "The API app registration's application id URI or client id (AUTH_AUDIENCE)."
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

variable "cors_allowed_origins" {
  type        = list(string)
  description = "Origins allowed to call both APIs from a browser (the portals)."
  default     = []
}

variable "portal_entra_client_id" {
  type        = string
  description = "The portal's Entra ID app registration (client id); empty: no portal sign-in."
  default     = ""
}

variable "portal_entra_authority" {
  type        = string
  description = "Entra ID authority for portal sign-in, e.g. https://login.microsoftonline.com/<tenant id>."
  default     = ""
}

variable "portal_api_scope" {
  type        = string
  description = "The API scope the portal asks for, e.g. api://agent-platform/user_impersonation."
  default     = ""
}

variable "core_always_ready_instances" {
  type        = number
  description = "Always-ready instances of the Core API app: 0 scales from zero (cold starts), 1 or more keeps them warm (billed)."
  default     = 0
  validation {
    condition     = var.core_always_ready_instances >= 0 && var.core_always_ready_instances <= 20
    error_message = "core_always_ready_instances must be between 0 and 20."
  }
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

variable "relay_image" {
  type        = string
  description = "The realtime relay's container image: the Dockerfile's service target, pushed to the registry (REGISTRY_LOGIN_SERVER output). A placeholder until then."
  default     = "mcr.microsoft.com/k8se/quickstart:latest"
  validation {
    condition     = length(var.relay_image) > 0
    error_message = "relay_image must name an image."
  }
}
