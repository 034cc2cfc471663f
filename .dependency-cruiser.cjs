// The dependency rules of the code, checked by `npm run deps` (part of `npm run check`). The layers, from the
// bottom: foundations (errors, config, logging, store, network, workers, telemetry), resource type
// definitions (data), the HTTP layer, the features, and the hosts that assemble and serve them. Each layer
// imports only the ones below it; see docs/architecture.md.

/** Foundations: no feature, no resource type, no HTTP. */
const FOUNDATIONS = '^shared/(errors|config|log|version|once)\\.ts$|^shared/(store|net|workers|telemetry)/';
/** Resource types as data: their kinds and schemas. */
const RESOURCE_TYPES = '^shared/providers/(types/|resource-type\\.ts$)';
/** The HTTP layer other than its hosts. */
const HTTP = '^shared/http/(?!(node-host|azure-host|standalone)\\.ts$)';
/** The hosts: the two adapters, the composition root, the functions, scripts and benchmarks. */
const HOSTS = '^(functions/|scripts/|bench/)|^shared/(services|health|infra-containers)\\.ts$|^shared/http/(node-host|azure-host|standalone)\\.ts$';
/** The vocabulary of identity shared by HTTP and the features (the principal and the credentials a route takes). */
const IDENTITY = '^shared/auth/principal\\.ts$';
/** The built-in role catalogue: data that the role definition resource type serves. */
const ROLE_CATALOGUE = '^shared/auth/roles\\.ts$';

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
      comment: 'Resource type definitions import only foundations, other type definitions and the role catalogue; rules that need features are attached in providers/registry.ts.',
      from: { path: RESOURCE_TYPES },
      to: { path: '^(shared|functions|scripts)/', pathNot: `${FOUNDATIONS}|${RESOURCE_TYPES}|${ROLE_CATALOGUE}` },
    },
    {
      name: 'http-imports-no-feature',
      severity: 'error',
      comment: 'The HTTP layer knows requests, replies and routes, not what the service does; it sees the services only as a type handed to handlers.',
      from: { path: HTTP },
      to: { path: '^(shared|functions|scripts)/', pathNot: `${FOUNDATIONS}|${HTTP}|${IDENTITY}`, dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'features-do-not-import-hosts',
      severity: 'error',
      comment: 'Features are served by the hosts, never the other way round (the services container is passed in; its type may be named).',
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
