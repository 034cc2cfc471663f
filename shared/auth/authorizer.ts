// Role-based authorization: what a principal may do at a resource scope.
import type { Principal } from './principal.js';

/** Roles and actions a principal holds at one scope (the `roles` and `actions` of list and get envelopes). */
export interface Access {
  roles: string[];
  actions: string[];
}

export interface Authorizer {
  /** Throws a 403 ApiError unless the principal may perform `action` at `scope`. */
  require(principal: Principal, action: string, scope: string): Promise<void>;
  can(principal: Principal, action: string, scope: string): Promise<boolean>;
  /** Whether the principal holds the role (by definition id) at the scope, directly or inherited. */
  hasRole(principal: Principal, roleId: string, scope: string): Promise<boolean>;
  /** Roles held at the scope, and which of `actions` they grant there. */
  access(principal: Principal, scope: string, actions: readonly string[]): Promise<Access>;
  /** Drops cached assignments after a role assignment changes. */
  invalidate(): void;
}
