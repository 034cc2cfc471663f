// Plugin references checked on save: declared parameters of their types, required ones given, and the
// dependencies a selecting parameter picks; and Markdown partitioning by section.
import { describe, expect, it } from 'vitest';
import { DomainError } from '../../../../shared/errors.js';
import { partitionMarkdown } from '../../../../shared/knowledge/partition.js';
import { builtinPlugin } from '../../../../shared/plugins/builtin.js';
import { checkReference } from '../../../../shared/plugins/references.js';

const partition = builtinPlugin('Dotnet-Builtin-PartitionStage');
const shield = builtinPlugin('Dotnet-Builtin-ShieldStage');
const available = new Set([
  'Dotnet-Builtin-TokenPartitioning',
  'Dotnet-Builtin-MarkdownPartitioning',
  'Dotnet-Builtin-Blocklist',
  'Dotnet-Builtin-PromptShield',
]);
const problem = (f: () => void) => {
  try {
    f();
    return undefined;
  } catch (e) {
    return e instanceof DomainError ? e.details[0] : e;
  }
};

describe('plugin references', () => {
  it(
    'accepts declared parameters of their types, null where the default is null, and a dependency the selection ' +
      'picks',
    () => {
      if (!partition || !shield) throw new Error('the catalogue lacks its stages');
      expect(
        problem(() =>
          checkReference(
            partition,
            {
              partitioner: 'Dotnet-Builtin-MarkdownPartitioning',
              partition_size_tokens: 200,
              partition_overlap_tokens: null,
            },
            { field: 'p', available: available },
          ),
        ),
      ).toBeUndefined();
      expect(
        problem(() =>
          checkReference(
            shield,
            { shielding_plugins: ['Dotnet-Builtin-Blocklist', 'Dotnet-Builtin-PromptShield'] },
            { field: 's', available: available },
          ),
        ),
      ).toBeUndefined();
    },
  );

  it(
    'names the field of an unknown parameter, a wrong type, a missing one, and a selection the dependencies do ' +
      'not allow',
    () => {
      if (!partition || !shield) throw new Error('the catalogue lacks its stages');
      expect(problem(() => checkReference(partition, { size: 1 }, { field: 'p', available: available }))).toMatchObject(
        {
          field: 'p.size',
          message: expect.stringContaining('size is not a parameter of Dotnet-Builtin-PartitionStage') as string,
        },
      );
      expect(
        problem(() => checkReference(partition, { partition_size_tokens: 1.5 }, { field: 'p', available: available })),
      ).toMatchObject({
        field: 'p.partition_size_tokens',
        message: 'partition_size_tokens must be an integer',
      });
      expect(
        problem(() =>
          checkReference(
            shield,
            { shielding_plugins: ['Dotnet-Builtin-Blocklist', 'Dotnet-Builtin-Blocklist'] },
            { field: 's', available: available },
          ),
        ),
      ).toMatchObject({ field: 's.shielding_plugins' });
      expect(problem(() => checkReference(partition, {}, { field: 'p', available: new Set() }))).toMatchObject({
        field: 'p',
        message: expect.stringContaining('none of them is installed') as string,
      });
      const required = {
        name: 'Python-x-y',
        parameters: [{ name: 'model', type: 'resource-object-id' as const, description: '' }],
        dependencies: [],
      };
      expect(problem(() => checkReference(required, {}, { field: 'w', available: available }))).toMatchObject({
        field: 'w.model',
        message: 'model is required by Python-x-y',
      });
    },
  );
});

describe('Markdown partitioning', () => {
  it(
    'makes one partition per section, ignores headings in code fences, and cuts a long section into token ' + 'windows',
    () => {
      const text = '# One\nfirst\n```\n# not a heading\n```\n## Two\nsecond';
      expect(partitionMarkdown(text, { sizeTokens: 100, overlapTokens: 0 })).toEqual([
        '# One\nfirst\n```\n# not a heading\n```',
        '## Two\nsecond',
      ]);
      const long = `# Long\n${'word '.repeat(300)}`;
      expect(partitionMarkdown(long, { sizeTokens: 50, overlapTokens: 0 }).length).toBeGreaterThan(5);
    },
  );
});
