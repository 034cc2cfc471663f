// The built-in Dotnet-Builtin-PromptShield plugin: Azure AI Content Safety through the API endpoint
// configuration whose provider is `azure-content-safety` (API key or managed identity, like model endpoints).
// Before the model, Prompt Shields look for a prompt attack in the user prompt; after it, text analysis rates
// the answer in the four harm categories and blocks at the severity threshold. REST calls go through the
// model gateway's client (deadline, retries, size cap, outbound rules) rather than a second HTTP stack.
import { endpointView, type EndpointView } from '../models/endpoint.js';
import { invalid } from '../models/upstream-errors.js';
import { apiEndpointConfigurations } from '../providers/types/catalog.js';
import type { ShieldText, Verdict } from './plugins.js';
import type { ModelGateway } from '../models/gateway.js';
import type { ResourceCache } from '../providers/resource-cache.js';
import type { AppSettings } from '../providers/settings.js';

/** What this module uses of the service (the hosts pass the whole of it). */
export interface PromptShieldDeps {
  readonly models: ModelGateway;
  readonly resourceCache: ResourceCache;
  readonly settings: AppSettings;
}

const API_VERSION = '2024-09-01';
/** Longest text one call takes (characters); longer texts are screened in pieces. */
const MAX_TEXT = 10_000;
export const SEVERITY_SETTING = 'Svc:Shielding:PromptShield:SeverityThreshold';

/** The Content Safety endpoint, or undefined when none is configured. */
export async function contentSafetyEndpoint(s: PromptShieldDeps): Promise<EndpointView | undefined> {
  const doc = await s.resourceCache.findBy(apiEndpointConfigurations, 'provider', 'azure-content-safety');
  return doc ? endpointView(doc) : undefined;
}

const pieces = (text: string) =>
  Array.from({ length: Math.max(1, Math.ceil(text.length / MAX_TEXT)) }, (_, i) =>
    text.slice(i * MAX_TEXT, (i + 1) * MAX_TEXT),
  );
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Prompt Shields on the user prompt (`pre`), or text analysis of the answer (`post`). */
export async function promptShield(s: PromptShieldDeps, { stage, text, signal }: ShieldText): Promise<Verdict> {
  const endpoint = await contentSafetyEndpoint(s);
  if (!endpoint) throw new Error('no API endpoint configuration with provider azure-content-safety exists');
  const version = encodeURIComponent(endpoint.apiVersion ?? API_VERSION);
  const url = (operation: string) => `${endpoint.url}/contentsafety/text:${operation}?api-version=${version}`;
  if (stage === 'pre') {
    const answers = await Promise.all(
      pieces(text).map((userPrompt) =>
        s.models.postJson({ endpoint, url: url('shieldPrompt'), payload: { userPrompt, documents: [] } }, { signal }),
      ),
    );
    for (const answer of answers) {
      const analysis = isObject(answer) && isObject(answer.userPromptAnalysis) ? answer.userPromptAnalysis : undefined;
      if (typeof analysis?.attackDetected !== 'boolean')
        throw invalid('Prompt Shields answered without userPromptAnalysis.attackDetected');
      if (analysis.attackDetected) return { verdict: 'blocked', reason: 'Prompt Shields detected a prompt attack' };
    }
    return { verdict: 'allowed' };
  }
  const threshold = await s.settings.getNumber(SEVERITY_SETTING, 4);
  const answers = await Promise.all(
    pieces(text).map((piece) =>
      s.models.postJson(
        { endpoint, url: url('analyze'), payload: { text: piece, outputType: 'FourSeverityLevels' } },
        { signal },
      ),
    ),
  );
  for (const answer of answers) {
    const categories: unknown[] | undefined =
      isObject(answer) && Array.isArray(answer.categoriesAnalysis) ? answer.categoriesAnalysis : undefined;
    if (!categories) throw invalid('text analysis answered without categoriesAnalysis');
    for (const c of categories) {
      if (!isObject(c) || typeof c.category !== 'string' || typeof c.severity !== 'number')
        throw invalid('text analysis answered a category without a severity');
      if (c.severity >= threshold) return { verdict: 'blocked', reason: `${c.category} at severity ${c.severity}` };
    }
  }
  return { verdict: 'allowed' };
}
