// The model an object id names, of the type a caller needs, with the endpoint it is called through: what a
// workflow plugin's `complete` and an evaluation's judge ask for (completion models), and a realtime call
// (realtime models).
import { aiModels, apiEndpointConfigurations, type AiModelDoc } from '../providers/types/catalog.js';
import { endpointView, MODEL_PROVIDERS, type EndpointView } from './endpoint.js';
import type { ResourceCache } from '../providers/resource-cache.js';

/** What this module uses of the service (the hosts pass the whole of it). */
export interface ModelEndpointDeps {
  readonly resourceCache: ResourceCache;
}

/** The model and its endpoint; a string saying what is wrong when it cannot be called. */
export async function modelWithEndpoint(
  s: ModelEndpointDeps,
  objectId: string,
  type: AiModelDoc['model_type'],
): Promise<{ model: AiModelDoc; endpoint: EndpointView } | string> {
  const model = await s.resourceCache.get(objectId, aiModels);
  if (!model || model.model_type !== type) return `${objectId} is not a ${type} model of this instance`;
  const endpointDoc = await s.resourceCache.get(model.api_endpoint_object_id, apiEndpointConfigurations);
  const endpoint = endpointDoc && endpointView(endpointDoc);
  if (!endpoint || !MODEL_PROVIDERS.includes(endpoint.provider))
    return `the API endpoint of ${model.name} is not valid for a model`;
  return { model, endpoint };
}

/** A completion model and its endpoint. */
export const completionModel = (s: ModelEndpointDeps, objectId: string) => modelWithEndpoint(s, objectId, 'completion');
