// The dependency rules of the code, checked by `npm run deps` (part of `npm run check`). The layers, from the
// bottom: foundations (errors, config, logging, schemas, store, network, workers, telemetry), resource type
// definitions (data), the HTTP layer, the features, the resource registry (the types with the rules the
// features attach to them), and the hosts that assemble and serve them. Each layer imports only the ones
// below it; see docs/architecture.md. `scripts/structure-report.ts --check` adds the rule these cannot say:
// no run-time cycle between folders.

/** Foundations: no feature, no resource type, no HTTP. */
const FOUNDATIONS =
  '^shared/(errors|config|config-settings|log|version|once|schemas)\\.ts$|^shared/(store|net|workers|telemetry)/';
/** Resource types as data: their kinds, schemas and the built-in role catalogue. */
const RESOURCE_TYPES = '^shared/providers/types/';
/** The HTTP layer other than its hosts. */
const HTTP = '^shared/http/(?!(node-host|azure-host|standalone)\\.ts$)';
/** The hosts: the two adapters, the composition root, the functions, scripts and benchmarks. */
const HOSTS =
  '^(functions/|scripts/|bench/)|^shared/(services|health|infra-containers)\\.ts$|^shared/http/(node-host|azure-host|standalone)\\.ts$';
/** Where handlers meet the services: the route and queue handler types, which hand the composition root to them. */
const WIRING = '^shared/http/(route|pipeline)\\.ts$|^shared/queues/(handler|timer|local-consumer)\\.ts$';
/** The composition root. */
const COMPOSITION_ROOT = '^shared/services\\.ts$';
/** The vocabulary of identity shared by HTTP and the features (the principal and the credentials a route takes). */
const IDENTITY = '^shared/auth/principal\\.ts$';
/** The resource registry: the resource types with the rules the features attach to them. */
const REGISTRY = '^shared/registry/';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-runtime-cycle',
      severity: 'error',
      comment: 'No import cycle at run time (imports of types only are erased, and do not count).',
      from: {},
      to: { circular: true, viaOnly: { dependencyTypesNot: ['type-only'] } },
    },
    {
      name: 'foundations-import-no-feature',
      severity: 'error',
      comment: 'Store, config, network, workers and telemetry are the ground floor: they import nothing above them.',
      from: { path: FOUNDATIONS },
      to: { path: '^(shared|functions|scripts)/', pathNot: FOUNDATIONS },
    },
    {
      name: 'resource-types-are-data',
      severity: 'error',
      comment:
        'Resource type definitions import only foundations and other type definitions; rules that need features are attached in registry/registry.ts.',
      from: { path: RESOURCE_TYPES },
      to: { path: '^(shared|functions|scripts)/', pathNot: `${FOUNDATIONS}|${RESOURCE_TYPES}` },
    },
    {
      name: 'http-imports-no-feature',
      severity: 'error',
      comment:
        'The HTTP layer knows requests, replies and routes, not what the service does; it sees the services only as a type handed to handlers.',
      from: { path: HTTP },
      to: {
        path: '^(shared|functions|scripts)/',
        pathNot: `${FOUNDATIONS}|${HTTP}|${IDENTITY}`,
        dependencyTypesNot: ['type-only'],
      },
    },
    {
      name: 'no-feature-imports-the-composition-root',
      severity: 'error',
      comment:
        'A feature declares the few collaborators it uses (an interface of its own), so its signature tells what it touches; only the hosts and the handler wiring name the composition root, types included.',
      from: { path: '^shared/', pathNot: `${HOSTS}|${WIRING}` },
      to: { path: COMPOSITION_ROOT },
    },
    {
      name: 'only-hosts-import-the-registry',
      severity: 'error',
      comment:
        'The registry sits above the features (it attaches their rules to the resource types): no feature below it imports it at run time.',
      from: { path: '^shared/', pathNot: `${HOSTS}|${REGISTRY}|^shared/artifacts/` },
      to: { path: REGISTRY, dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'features-do-not-import-hosts',
      severity: 'error',
      comment:
        'Features are served by the hosts, never the other way round (the services container is passed in; its type may be named).',
      from: { path: '^shared/', pathNot: HOSTS },
      to: { path: HOSTS, dependencyTypesNot: ['type-only'] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.tsx', '.js'] },
  },
};
