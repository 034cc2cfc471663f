// The built-in plugin catalogue, listed under the package `Dotnet-Builtin` by `GET .../plugins`: the data
// sources, text extraction and partitioning the pipelines use, the data pipeline stages a pipeline's `stages`
// names, and the shielding plugins (shielding/plugins.ts). The service itself runs them; each declares its
// parameters and dependencies as an uploaded plugin does, and references to them are checked against that.
import { shieldingPlugins } from '../shielding/plugins.js';
import { BUILTIN_PACKAGE } from '../providers/types/builtin-package.js';
import type { Manifest } from './manifest.js';

type Declared = Pick<Manifest['plugins'][number], 'parameters' | 'dependencies' | 'parameter_selection_hints'>;

export interface BuiltinPlugin extends Declared {
  name: string;
  display_name: string;
  description: string;
  category: string;
  /** The parameter whose value picks among the dependencies' plugins (a name, or a list for Multiple). */
  selects?: string;
}

const full = (short: string) => `${BUILTIN_PACKAGE}-${short}`;

export const TOKEN_PARTITIONING = full('TokenPartitioning');
export const MARKDOWN_PARTITIONING = full('MarkdownPartitioning');
export const TEXT_EXTRACTION = full('TextExtraction');
export const STAGES = {
  extract: full('ExtractStage'),
  partition: full('PartitionStage'),
  shield: full('ShieldStage'),
  embed: full('EmbedStage'),
  index: full('IndexStage'),
} as const;

const none = { parameters: [], dependencies: [], parameter_selection_hints: {} };

/** A catalogue entry: the plugin's short name (the package's name prefixes it), what it is, and what it declares. */
type Entry = Pick<BuiltinPlugin, 'display_name' | 'category' | 'description' | 'selects'> &
  Partial<Declared> & { short: string };

const plugin = ({ short, display_name, category, description, ...declared }: Entry): BuiltinPlugin => ({
  name: full(short),
  display_name,
  category,
  description,
  ...none,
  ...declared,
});

const CATALOGUE: readonly BuiltinPlugin[] = [
  plugin({
    short: 'AzureBlobDataSource',
    display_name: 'Azure Blob data source',
    category: 'Data Source',
    description: 'Documents of a Blob container (data_source_type AzureBlob)',
  }),
  plugin({
    short: 'WebDataSource',
    display_name: 'Web data source',
    category: 'Data Source',
    description: 'Web pages under the URL prefixes of the source (data_source_type Web)',
  }),
  plugin({
    short: 'SharePointOnlineDataSource',
    display_name: 'SharePoint Online data source',
    category: 'Data Source',
    description:
      'SharePoint Online document libraries (data_source_type SharePointOnline); such a source is a definition ' +
      'only for now: processing it is a 400',
  }),
  plugin({
    short: 'AzureDataLakeDataSource',
    display_name: 'Azure Data Lake data source',
    category: 'Data Source',
    description:
      'Azure Data Lake file systems (data_source_type AzureDataLake); such a source is a definition only for ' +
      'now: processing it is a 400',
  }),
  plugin({
    short: 'TextExtraction',
    display_name: 'Text extraction',
    category: 'Content Text Extraction',
    description:
      'Text of plain text, Markdown, HTML, PDF, Word, PowerPoint and Excel documents, read in the extraction workers',
  }),
  plugin({
    short: 'TokenPartitioning',
    display_name: 'Token partitioning',
    category: 'Content Text Partitioning',
    description: 'Windows of a number of tokens (cl100k) with an overlap',
  }),
  plugin({
    short: 'MarkdownPartitioning',
    display_name: 'Markdown partitioning',
    category: 'Content Text Partitioning',
    description:
      'One partition per Markdown section (a heading and its text); a section longer than the size is cut into ' +
      'token windows',
  }),
  plugin({
    short: 'ExtractStage',
    display_name: 'Extract',
    category: 'Data Pipeline Stage',
    description: "Reads each document's text",
    dependencies: [{ selection_type: 'Single', dependency_plugin_names: [TEXT_EXTRACTION] }],
  }),
  plugin({
    short: 'PartitionStage',
    display_name: 'Partition',
    category: 'Data Pipeline Stage',
    description: "Cuts each document's text into partitions with the partitioner it names",
    parameters: [
      {
        name: 'partitioner',
        type: 'string',
        description: `The partitioning plugin: ${TOKEN_PARTITIONING} or ${MARKDOWN_PARTITIONING}`,
        default_value: TOKEN_PARTITIONING,
      },
      {
        name: 'partition_size_tokens',
        type: 'int',
        description: "Tokens of a partition at most (16 to 8192; null: the pipeline's)",
        default_value: null,
      },
      {
        name: 'partition_overlap_tokens',
        type: 'int',
        description: "Tokens one token window shares with the previous one (null: the pipeline's)",
        default_value: null,
      },
    ],
    selects: 'partitioner',
    dependencies: [{ selection_type: 'Single', dependency_plugin_names: [TOKEN_PARTITIONING, MARKDOWN_PARTITIONING] }],
  }),
  plugin({
    short: 'ShieldStage',
    display_name: 'Shield',
    category: 'Data Pipeline Stage',
    description:
      'Screens each partition with shielding plugins, in order; a blocked partition is not indexed, and the run ' +
      'names it',
    parameters: [
      {
        name: 'shielding_plugins',
        type: 'array',
        description: 'Names of shielding plugins',
        default_value: [full('Blocklist')],
      },
    ],
    dependencies: [{ selection_type: 'Multiple', dependency_plugin_names: [full('Blocklist'), full('PromptShield')] }],
    selects: 'shielding_plugins',
  }),
  plugin({
    short: 'EmbedStage',
    display_name: 'Embed',
    category: 'Data Pipeline Stage',
    description:
      "Embeds each partition with the pipeline's embedding model (embedding_ai_model_object_id, embedding_dimensions)",
  }),
  plugin({
    short: 'IndexStage',
    display_name: 'Index',
    category: 'Data Pipeline Stage',
    description: "Writes the partitions to the pipeline's knowledge index (index_name)",
  }),
];

/** Every built-in plugin, the shielding ones included. */
export function builtinCatalogue(): readonly BuiltinPlugin[] {
  return [
    ...CATALOGUE,
    ...shieldingPlugins().map((p) =>
      plugin({
        short: p.name.slice(BUILTIN_PACKAGE.length + 1),
        display_name: p.display_name,
        category: 'Shielding',
        description: p.description,
      }),
    ),
  ];
}

/** The built-in plugins as `GET .../plugins` lists them. */
export function builtinPlugins(instanceId: string) {
  return builtinCatalogue().map((p) => ({
    type: 'plugin' as const,
    name: p.name,
    object_id: `/instances/${instanceId}/providers/Svc.Platform/plugins/${p.name}`,
    display_name: p.display_name,
    description: p.description,
    category: p.category,
    plugin_package_object_id: `/instances/${instanceId}/providers/Svc.Platform/pluginPackages/${BUILTIN_PACKAGE}`,
    parameters: p.parameters.map(({ default_value, ...rest }) =>
      default_value === undefined ? rest : { ...rest, default_value },
    ),
    parameter_selection_hints: p.parameter_selection_hints,
    dependencies: p.dependencies,
  }));
}

/** A built-in plugin by name (case-insensitive). */
export function builtinPlugin(name: string): BuiltinPlugin | undefined {
  return builtinCatalogue().find((p) => p.name.toLowerCase() === name.toLowerCase());
}
