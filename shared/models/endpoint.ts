// API endpoint configurations as the model gateway works with them: a typed view of a stored endpoint,
// parsed once per stored version (the fields are defined in providers/types/model-fields.ts).
import { z } from 'zod';
import { ApiEndpointFields, MODEL_PROVIDERS, PROVIDERS } from '../providers/types/model-fields.js';
import type { AnyResource } from '../providers/types/resource-type.js';
import { DEFAULT_MAX_CONNECTIONS } from './connection-gate.js';

export { MODEL_PROVIDERS, PROVIDERS };

/** An endpoint as the gateway uses it. `version` changes whenever the resource is saved. */
export interface EndpointView {
  objectId: string;
  version: string;
  provider: (typeof PROVIDERS)[number];
  url: string;
  apiVersion: string | undefined;
  authenticationType: 'None' | 'APIKey' | 'AzureIdentity';
  secretName: string | undefined;
  scope: string | undefined;
  timeoutMs: number;
  /** Calls it holds open at once (streams hold theirs while they stream); more wait for one, fairly by caller. */
  maxConnections: number;
  /** Saved by a principal who may point the service inside its network: loopback and private addresses allowed. */
  privateNetwork: boolean;
}

const Stored = z.object({ ...ApiEndpointFields, object_id: z.string(), updated_on: z.string() }).loose();

// Parsed once per stored version: the resource cache hands out the same document object until it changes.
const views = new WeakMap<AnyResource, EndpointView | null>();

/** The typed view of a stored endpoint, parsed once per stored document; undefined when it is not valid. */
export function endpointView(doc: AnyResource): EndpointView | undefined {
  let view = views.get(doc);
  if (view === undefined) views.set(doc, (view = parseEndpoint(doc) ?? null));
  return view ?? undefined;
}

function parseEndpoint(doc: AnyResource): EndpointView | undefined {
  const parsed = Stored.safeParse(doc);
  if (!parsed.success) return undefined;
  const e = parsed.data;
  return {
    objectId: e.object_id,
    version: e.updated_on,
    provider: e.provider,
    url: e.url.replace(/\/+$/, ''),
    apiVersion: e.api_version,
    authenticationType: e.authentication_type,
    secretName: e.authentication_parameters.api_key_secret_name,
    scope: e.authentication_parameters.scope,
    timeoutMs: e.timeout_seconds * 1000,
    maxConnections: e.max_connections ?? DEFAULT_MAX_CONNECTIONS,
    privateNetwork: e.private_network === true,
  };
}
