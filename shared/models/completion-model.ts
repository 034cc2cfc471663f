// The completion model an object id names, with the endpoint it is called through: what a workflow plugin's
// `complete` and an evaluation's judge ask for by object id.
import { aiModels, apiEndpointConfigurations, type AiModelDoc } from '../providers/types/catalog.js';
import type { Services } from '../services.js';
import { endpointView, MODEL_PROVIDERS, type EndpointView } from './endpoint.js';

/** The model and its endpoint; a string saying what is wrong when it cannot be called. */
export async function completionModel(s: Services, objectId: string): Promise<{ model: AiModelDoc; endpoint: EndpointView } | string> {
  const model = await s.resourceCache.get(objectId, aiModels);
  if (!model || model.model_type !== 'completion') return `${objectId} is not a completion model of this instance`;
  const endpointDoc = await s.resourceCache.get(model.api_endpoint_object_id, apiEndpointConfigurations);
  const endpoint = endpointDoc && endpointView(endpointDoc);
  if (!endpoint || !MODEL_PROVIDERS.includes(endpoint.provider)) return `the API endpoint of ${model.name} is not valid for a model`;
  return { model, endpoint };
}
