import { z } from 'zod';
import { InputError } from './errors.js';
import { rateLimitSchema } from './limits.js';
import { compilePattern, MAX_PATTERN_CHARS, PatternError } from './patterns.js';
import { resolveKeyOrWildcard } from './provider-ids.js';

/**
 * The keys every suite has, whatever its task family: dataset, backends, prompt overrides,
 * generation parameters, run settings, simulator settings. A family adds its own block (and
 * dataset column roles); `suite.ts` composes the families' suites into one schema. Families
 * import this module, never `suite.ts`.
 */

/** Column roles every family understands. */
const commonColumns = {
  id: z.string().optional().describe('Column holding a stable item id (default: `id`, then `idx`).'),
  gold: z
    .union([z.string(), z.array(z.string().min(1)).min(2)])
    .optional()
    .describe(
      'Gold (reference) column; each family has its defaults. A list of columns (`["w1", "w2", "w3"]`), or a path with `*` over an array (`sentences.0.responses.*.response`), gives several annotators: the gold is their majority (or the mean or median of their ratings: `dataset.goldAggregate`), each one is kept in the result (`annotations`), and a tie follows `dataset.goldTie`.',
    ),
  output: z
    .string()
    .optional()
    .describe(
      'Column holding a pre-generated output to score (another tool, an earlier run): no model is called to produce it, only the scorers run.',
    ),
  explanation: z
    .string()
    .optional()
    .describe('With `output`: the column explaining it (default `reason`, then `judge_reason`).'),
  producer: z
    .string()
    .min(1)
    .optional()
    .describe(
      "Column naming the model that produced each judged output (`openai:gpt-4o`, `claude-3-5-sonnet`, a Bedrock id): the report sets the judge's verdicts against gold by the producer's model family, and gives how much more favourably the judge rates its own family's outputs (report.json `scores.<scorer>.bias.selfPreference`).",
    ),
};

function isTextEncoding(label: string): boolean {
  try {
    new TextDecoder(label);
    return true;
  } catch {
    return false;
  }
}

/** One character, and not one that delimited text gives another meaning (a quote, a line break). */
function isOneDelimiter(value: string): boolean {
  return [...value].length === 1 && !['"', '\n', '\r'].includes(value);
}

/**
 * `source` compiles as a pattern of RE2's syntax (linear time: see patterns.ts) with exactly
 * one capture group, the part kept.
 */
function oneCaptureGroup(source: string): string | undefined {
  let groups: number;
  try {
    groups = compilePattern(source).groups;
  } catch (error) {
    if (error instanceof PatternError) return error.message;
    throw error;
  }
  return groups === 1
    ? undefined
    : `needs exactly one capture group (the part kept), it has ${groups}: e.g. "####\\s*([-0-9.,]+)\\s*$"; write other groups as (?:…)`;
}

/** How a family's dataset columns are named beyond its roles. */
export interface ColumnOptions {
  /**
   * The family's prompt placeholders are dataset columns (a declared judge): `columns` may map
   * any placeholder to the column (or dot path) it reads.
   */
  placeholders?: boolean;
  /**
   * The family reads an output given in several columns (a pairwise judge's verdicts in both
   * orders): `columns.output` may be a list, which the family's own check constrains.
   */
  severalOutputs?: boolean;
}

/** `columns.output` for a family that reads an output from several columns. */
const severalOutputColumns = z
  .union([z.string(), z.array(z.string().min(1)).min(2)])
  .optional()
  .describe(
    'Column holding a pre-generated output to score (another tool, an earlier run): no model is called to produce it, only the scorers run. A list of columns gives one output in several parts, as the task reads them: a pairwise judge\'s verdicts in both orders, `["verdict_ab", "verdict_ba"]` (the pair as given, then with the answers swapped).',
  );

export function datasetSchema<C extends z.ZodRawShape>(columns: C, options: ColumnOptions = {}) {
  const roles = Object.keys({ ...commonColumns, ...columns });
  const mapping = z.object({
    ...commonColumns,
    ...(options.severalOutputs ? { output: severalOutputColumns } : {}),
    ...columns,
  });
  const byRole = <T extends z.ZodType>(value: T) =>
    z.record(z.string(), value).superRefine((map, ctx) => {
      for (const role of Object.keys(map))
        if (!roles.includes(role) && !options.placeholders)
          ctx.addIssue({
            code: 'custom',
            path: [role],
            message: `${JSON.stringify(role)} is not a column role of this task (${roles.join(', ')})`,
          });
    });
  return z
    .object({
      path: z
        .string()
        .min(1)
        .describe('Dataset file, relative to the suite file (locally) or the bucket key (AWS).'),
      format: z
        .enum(['csv', 'tsv', 'jsonl', 'json', 'parquet'])
        .optional()
        .describe(
          'Default: from the file extension (.csv; .tsv or .tab; .jsonl or .ndjson; .json, an array of objects; .parquet).',
        ),
      compression: z
        .enum(['gzip', 'none'])
        .optional()
        .describe('Default: `gzip` for a name ending in `.gz` (any format but Parquet), else `none`.'),
      delimiter: z
        .string()
        .refine(isOneDelimiter, {
          message:
            'dataset.delimiter is one character that separates fields (e.g. ";", "|", or "\\t" for a tab), not a quote or a line break',
        })
        .optional()
        .describe(
          'Delimited text (csv, tsv): the character between fields. Default `,` for csv, a tab for tsv.',
        ),
      header: z
        .array(z.string().min(1))
        .min(1)
        .optional()
        .describe(
          "A CSV without a header row (MMLU's `question,A,B,C,D,answer`): its column names, in order; every line is a record.",
        ),
      columns: (options.placeholders
        ? mapping.catchall(
            z.string().min(1).describe('A prompt placeholder → the column (or dot path) it reads.'),
          )
        : mapping.strict()
      )
        // Every column role is optional, so an empty mapping is valid.
        .default({} as never)
        .describe(
          'Dataset column for each role, where the file uses other names. A name may be a dot path into the objects and arrays of a JSON, JSONL or Parquet row (`turns.0.responses.1.text`; keys with dots or spaces resolve, the longest key first); an exact column name wins. An object or array reaching an input or the gold makes the row invalid: name a field inside it. Columns no role names are kept with each result (`columns` in results.jsonl, `column:<name>` in labeled.csv).',
        ),
      extract: byRole(
        z.string().superRefine((source, ctx) => {
          const problem = oneCaptureGroup(source);
          if (problem) ctx.addIssue({ code: 'custom', message: problem });
        }),
      )
        .optional()
        .describe(
          `Role → a regular expression with one capture group: the capture replaces the value the role reads (GSM8K answers: {"gold": "####\\s*([-0-9.,]+)\\s*$"}). A value it does not match makes the row invalid. Runs before \`recode\`. RE2 syntax, matched in time linear in the field: no backreferences or lookaround (refused when the suite loads), \\s is ASCII whitespace; at most ${MAX_PATTERN_CHARS.toLocaleString('en-US')} characters.`,
        ),
      recode: byRole(z.record(z.string(), z.string()))
        .optional()
        .describe(
          'Role → a map of values: the value the role reads is replaced by its entry ({"gold": {"1": "A", "2": "B"}}); a value not in the map stays as it is. Applies after `extract`, to each annotator with several.',
        ),
      goldAggregate: z
        .enum(['mode', 'mean', 'median'])
        .optional()
        .describe(
          'How several annotators (a list of gold columns, or a gold path with `*`) make the gold: `mode` their most frequent label (a tie follows `goldTie`); `mean` the mean of their ratings ([3, 5, 5] → 4.333…); `median` the middle rating ([3, 1, 2] → 2; the mean of the two middle ones for an even number). Blank ratings are no vote; under `mean` and `median` a rating that is not a number makes the row invalid. Default: `mean` where the gold is a number on a scale (a judge with a `range`: an interval scale), `mode` for labels. Several 0/1 ratings of a number judge average to a share unless `mode` keeps the gold 0/1.',
        ),
      goldTie: z
        .enum(['first', 'invalid'])
        .optional()
        .describe(
          "Several annotators (a list of gold columns, or a gold path with `*`) whose most frequent labels tie, when the gold is their mode (`goldAggregate`): `invalid` (default) makes the row invalid for the judge's metrics (its labels still count in the annotators' alpha and pairwise agreement), `first` takes the tied label the earliest annotator gave.",
        ),
      partialGold: z
        .boolean()
        .optional()
        .describe(
          'Gold on only some rows by design: a blank gold is an unlabelled item (the judge still runs on it; without `partialGold` a blank gold cell makes the row invalid), agreement metrics use the labelled items, and each scorer adds the prediction-powered estimate (`ppi` in report.json) of what gold would say over every item. A family whose scorers need gold on every item (qa, gec, cleanup) refuses it.',
        ),
      goldFile: z
        .string()
        .min(1)
        .optional()
        .describe(
          "A CSV of `id,label` (what `assay label` exports; optional column `p`: the probability the item was chosen for labelling) merged into the dataset as gold by item id, over any gold the row has; the dataset needs an id column. A `p` becomes the row's `gold_p` column (weight 1/p in the prediction-powered estimates). Relative to the suite file. Implies `partialGold`. Local runs only.",
        ),
      encoding: z
        .string()
        .min(1)
        .refine(isTextEncoding, {
          message: 'not an encoding TextDecoder knows (e.g. "utf-8", "windows-1252", "latin1", "utf-16le")',
        })
        .optional()
        .describe(
          'The file\'s text encoding, as TextDecoder names it ("windows-1252", "latin1", "utf-16le", …). Default UTF-8, checked: a row with bytes that are not UTF-8 is invalid (with the byte offset), never read with U+FFFD in their place.',
        ),
      lang: z.string().default('en').describe('Language passed to prompts when the row has none.'),
      maxFieldChars: z
        .number()
        .int()
        .positive()
        .default(20_000)
        .describe(
          'A row with a longer field, in any column (inputs, gold, a given output), is invalid: it reaches no model.',
        ),
    })
    .strict();
}

export const paramsSchema = z
  .object({
    temperature: z.number().min(0).max(2).default(0),
    maxTokens: z.number().int().positive().default(400),
    structuredOutput: z
      .boolean()
      .default(true)
      .describe('Use native json_schema / tool / responseSchema modes.'),
  })
  .strict()
  .default({ temperature: 0, maxTokens: 400, structuredOutput: true });

export const runSettingsSchema = z
  .object({
    concurrency: z.number().int().min(1).max(256).default(8),
    maxAttempts: z
      .number()
      .int()
      .min(1)
      .max(10)
      .default(5)
      .describe('Per provider call, retryable errors only.'),
    sample: z
      .object({ n: z.number().int().positive(), seed: z.number().int().default(1) })
      .strict()
      .optional()
      .describe('Reproducible random sample of the dataset.'),
    cache: z
      .boolean()
      .default(true)
      .describe(
        'Answer identical calls (provider, model, parameters, rendered messages) from the LLM cache shared by all runs and suites. false: always call (an item resumed after a crash still reuses the answers it paid for itself).',
      ),
    timeoutMs: z
      .number()
      .int()
      .positive()
      .optional()
      .describe(
        'Per model request (ms): a request not answered by then is abandoned and retried like any transient failure. Default 60000. `assay run --timeout <ms>` overrides it.',
      ),
    budgetUsd: z
      .number()
      .positive()
      .optional()
      .describe(
        'No provider call starts once the run has spent this much; the items left fail as `budget`, and running again with a higher budget resumes them.',
      ),
    prices: z
      .object({
        asOf: z.string().optional(),
        currency: z.literal('USD').optional(),
        unit: z.literal('per 1M tokens').optional(),
        notes: z.string().optional(),
        models: z.record(
          z.string().regex(/^[a-z0-9_-]+:.+$/, 'model keys are vendor:model ids'),
          z.record(z.string(), z.number().nonnegative()),
        ),
      })
      .strict()
      .optional()
      .describe(
        'Prices for this suite\'s models, over the shipped price table: the same shape as a price override file (`--prices FILE`, ASSAY_PRICES), e.g. {"models": {"openai:my-finetune": {"input": 0.3, "output": 1.2}}} in USD per 1M tokens. A run with a budget needs a price for every backend it calls. On AWS these only add prices: a model the deployment prices keeps the deployment\'s price (budgets and the daily limit count it).',
      ),
    limits: z
      .record(z.string(), rateLimitSchema)
      .superRefine((limits, ctx) => {
        for (const key of Object.keys(limits)) {
          try {
            resolveKeyOrWildcard(key);
          } catch (error) {
            ctx.addIssue({ code: 'custom', path: [key], message: (error as Error).message });
          }
        }
      })
      .optional()
      .describe(
        'Declared limits per backend (id, alias, or a wildcard such as "llamacpp:*" or "openai-compatible:local/*" → {"rpm": 3000, "tpm": 2000000, "concurrency": 2}): rpm and tpm hold each model the key names to a token bucket, shared by everything in the process (on AWS, by the whole fleet); concurrency caps the calls in flight to all the backends the key names together (per process: on AWS, per worker container). An exact key wins over a wildcard. ASSAY_LIMITS adds more; the stricter wins.',
      ),
    repeats: z
      .number()
      .int()
      .min(1)
      .max(50)
      .optional()
      .describe(
        "Score every item this many times as independent samples (each model call of an item made k times, each with its own cache key and simulator noise; cost counts every one). The item's value is the majority label or pass (a tie goes to the value the earliest repeat gave) or the mean number; report.json scores.<scorer>.reliability gives the flip rate, Krippendorff's alpha across repeats and each headline metric's noise floor. Default 1. `assay run --repeats <k>` overrides it.",
      ),
    lane: z
      .enum(['sync', 'batch'])
      .default('sync')
      .describe(
        "sync: one call per request. batch: the calls go through the vendors' batch APIs (OpenAI, Anthropic, Gemini; half price, answers within 24 h); requests a batch cannot answer are made synchronously.",
      ),
    batchPollSeconds: z
      .number()
      .positive()
      .default(30)
      .describe('Batch lane: seconds between polls of the submitted batches.'),
  })
  .strict()
  .default({ concurrency: 8, maxAttempts: 5, cache: true, lane: 'sync', batchPollSeconds: 30 });

export const simSettingsSchema = z
  .object({
    noise: z.number().min(0).max(1).default(0.2).describe('Share of simulated answers that are wrong.'),
    latencyMs: z.number().int().min(0).default(20),
    seed: z.number().int().default(7),
  })
  .strict()
  .default({ noise: 0.2, latencyMs: 20, seed: 7 })
  .describe('Simulator settings, used only for `sim:` backends.');

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/**
 * The longest name of a suite's runs, in characters: file names and S3 object keys are built
 * from it (`reports/<name>/<name>-<hash>/…`, `suites/<name>.json`; a sweep's variants run as
 * `<suite>.<variant>`, which must fit too), and a file name has at most 255 bytes. Capped well
 * below, so every path segment made of it stays under 130 characters.
 */
export const MAX_NAME_CHARS = 100;

/** A suite's name (also a sweep variant's run, `<suite>.<variant>`): letters, digits, dot, dash, underscore. */
const suiteName = z
  .string()
  .regex(NAME, 'letters, digits, dot, dash, underscore')
  .max(
    MAX_NAME_CHARS,
    `at most ${MAX_NAME_CHARS} characters: file names and S3 object keys are built from it (a sweep variant's runs are named <suite>.<variant>, which must fit too); choose a shorter name`,
  );

/** What a variant changes in its suite: backends, generation parameters, prompt files, family options. */
const variantOverlay = {
  backends: z.array(z.string().min(1)).min(1).optional().describe('Replaces the suite backends.'),
  params: z
    .record(z.string(), z.unknown())
    .optional()
    .describe('Generation parameters merged over the suite params (e.g. {"temperature": 0.7}).'),
  prompts: z
    .record(z.string(), z.string())
    .optional()
    .describe('Prompt overrides merged over the suite prompts: role → path under prompts/.'),
  options: z
    .record(z.string(), z.unknown())
    .optional()
    .describe(
      'Keys of the task family block this variant sets (e.g. {"method": "modular"}), replacing the suite\'s.',
    ),
};

export const variantSchema = z
  .object({
    name: z
      .string()
      .regex(NAME, 'letters, digits, dot, dash, underscore')
      .describe('Variant name: its runs are named <suite>.<variant>.'),
    description: z.string().optional(),
    ...variantOverlay,
  })
  .strict();

/**
 * Keys of a sweep: named variants (or a matrix that expands to them), each a full run of its
 * own; a baseline variant the others are compared with on the same items; a gate a variant must
 * pass to be promoted; the metric that ranks them.
 */
export const sweepShape = {
  variants: z
    .array(variantSchema)
    .optional()
    .describe('Named variants of this suite; each runs on the same items, as a run of its own.'),
  matrix: z
    .object({
      backends: z
        .array(z.array(z.string().min(1)).min(1))
        .min(1)
        .optional(),
      params: z.record(z.string(), z.array(z.unknown()).min(1)).optional(),
      prompts: z.record(z.string(), z.array(z.string()).min(1)).optional(),
      options: z.record(z.string(), z.array(z.unknown()).min(1)).optional(),
    })
    .strict()
    .optional()
    .describe('Variants as the product of these choices (added after `variants`), named after them.'),
  baseline: z.string().optional().describe('The variant every other is compared with (default: the first).'),
  gate: z
    .object({
      conditions: z
        .array(z.string().min(1))
        .min(1)
        .describe(
          'Each a condition on a variant, e.g. "accuracy >= 0.8", "label.kappa >= baseline - 0.05", "p50 latency where words(transcript) >= 150 < baseline", "delta accuracy > 0 with p < 0.05", "cost per 10k <= 2"; "delta accuracy > noise" asks that the paired difference exceed the metric\'s noise floor (the larger of the two runs\', measured with run.repeats > 1), "delta accuracy > -noise" that it be no worse than the noise.',
        ),
      required: z
        .union([z.boolean(), z.array(z.string())])
        .default(false)
        .describe(
          'true: every variant but the baseline must pass (assay run exits 1 otherwise); or the variants that must.',
        ),
      sequential: z
        .boolean()
        .optional()
        .describe(
          "true: each variant's items are scored in a seeded random order and the variant stops as soon as anytime-valid confidence sequences settle every condition (promote) or one of them (reject); the items left end as `gate_settled` without a model call. Conditions must be on a per-item rate (accuracy, passRate) against a number or the baseline. Local shell only.",
        ),
      alpha: z
        .number()
        .gt(0)
        .lt(1)
        .optional()
        .describe(
          'With sequential: the most a sequential verdict may be wrong, whenever the variant stops (default 0.05).',
        ),
      seed: z
        .number()
        .int()
        .optional()
        .describe(
          "With sequential: the seed of the order items are scored in (default: run.sample's seed, else 1).",
        ),
    })
    .strict()
    .optional()
    .describe('What a variant must meet to be promoted over the baseline.'),
  rankBy: z
    .string()
    .optional()
    .describe(
      "The metric variants are ranked by, as gate conditions name it (default: the primary scorer's main metric).",
    ),
};

/** The common keys of a suite of family `task` (with its extra dataset column roles). */
export function commonSuiteShape<T extends string, C extends z.ZodRawShape = Record<never, never>>(
  task: T,
  columns: C = {} as C,
  columnOptions: ColumnOptions = {},
) {
  return {
    $schema: z.string().optional(),
    version: z.literal(1),
    name: suiteName.describe(
      `Suite name: report folder and run ids derive from it. At most ${MAX_NAME_CHARS} characters, a sweep variant's \`<suite>.<variant>\` included.`,
    ),
    description: z.string().optional(),
    dataset: datasetSchema(columns, columnOptions),
    task: z.literal(task).describe('Task family.'),
    backends: z
      .array(z.string().min(1))
      .default([])
      .describe(
        'Provider ids `vendor:model` or aliases; the first is the judge for single-backend methods. May be empty when the dataset gives the outputs and no scorer calls a model.',
      ),
    prompts: z
      .record(z.string(), z.string())
      .default({})
      .describe('Overrides of the family prompt files: role → path under prompts/.'),
    params: paramsSchema,
    slices: z
      .array(z.string().min(1))
      .optional()
      .refine((columns) => !columns || new Set(columns).size === columns.length, 'a column is named twice')
      .describe(
        "Dataset columns to slice the report by: the primary scorer's metrics (with their intervals) for each value of each column, in report.json `slices`, report.txt, report.html and comparisons; a gate names one as `accuracy[lang=de]`. A column the suite does not otherwise name is read from the row as it is; a row without it has the value `(none)`. Past 100 values of a column, the rest are counted under `(other)`.",
      ),
    run: runSettingsSchema,
    sim: simSettingsSchema,
    ...sweepShape,
  };
}

// Core code meets every family's suites: a list of output columns among them.
const baseSuiteSchema = z.object({
  ...commonSuiteShape('task', {}, { severalOutputs: true }),
  task: z.string(),
});

/** What core code knows of any suite: the common keys. Families extend it with their block. */
export type BaseSuite = z.infer<typeof baseSuiteSchema>;

export class SuiteError extends InputError {
  override readonly name = 'SuiteError';
}

/**
 * How a suite read back from storage is checked. The composition roots hand the stores the
 * full validator (every family's block, from the registry); without one a store checks the
 * common keys and keeps the family's block as stored.
 */
export type SuiteCheck = (raw: unknown, source: string) => BaseSuite;

/** The common keys checked, the family's block kept as it is. */
const storedSuiteSchema = baseSuiteSchema.passthrough();

export const checkCommonKeys: SuiteCheck = (raw, source) => {
  const parsed = storedSuiteSchema.safeParse(raw);
  if (!parsed.success) throw new SuiteError(`${source}: ${z.prettifyError(parsed.error)}`);
  return parsed.data as BaseSuite;
};
