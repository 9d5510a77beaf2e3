/**
 * openai/evals registry evals as suites: an eval file (`registry/evals/NAME.yaml`), its samples
 * (`samples_jsonl`, under `registry/data/`) and, for model-graded evals, the spec it names
 * (`registry/modelgraded/SPEC.yaml`). Classes: `Match`, `Includes`, `FuzzyMatch` and
 * `ModelBasedClassify`; any other class is listed as refused. A run's record log (the JSONL
 * `oaieval` writes) gives the outputs and grades `--check` compares with.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { Check } from '../../shared/families/checks/suite.js';
import {
  columnName,
  convertTemplate,
  emptyPlan,
  ImportError,
  type ImportPlan,
  jsonLines,
  jsonl,
  messagesText,
  promptPath,
} from './plan.js';

type Json = Record<string, unknown>;

/** The answer instructions openai/evals appends to a model-graded prompt, by `eval_type` (its classify_utils.py). */
const ANSWER_PROMPTS: Record<string, string> = {
  classify:
    'Answer the question by printing only a single choice from {choices} (without quotes or punctuation) corresponding to the correct answer with no other text.',
  classify_cot:
    'First, answer by printing a single choice from {choices} (without quotes or punctuation) corresponding to the correct answer. Then, from the next line, explain your reasonings step by step.',
  cot_classify:
    'First, write out in a step by step manner your reasoning to be sure that your conclusion is correct. Avoid simply stating the correct answer at the outset. Then print only a single choice from {choices} (without quotes or punctuation) on its own line corresponding to the correct answer. At the end, repeat just the answer by itself on a new line.\n\nReasoning:',
};
const EVAL_TYPES = ['cot_classify', 'classify_cot', 'classify'] as const;

const BACKEND = 'openai:gpt-4o-mini';

async function yamlFile(path: string): Promise<Json> {
  try {
    return (parseYaml(await readFile(path, 'utf8')) ?? {}) as Json;
  } catch (error) {
    throw new ImportError(`${path}: not YAML: ${(error as Error).message}`);
  }
}

async function samplesOf(path: string): Promise<Json[]> {
  if (!existsSync(path)) throw new ImportError(`samples file ${path} not found`);
  const text = await readFile(path, 'utf8');
  if (text.startsWith('version https://git-lfs'))
    throw new ImportError(
      `${path} is a Git LFS pointer, not the data: run \`git lfs pull\` in the evals clone`,
    );
  return jsonLines(text, path, 'a sample');
}

/** A sample's field as text: chat messages as a transcript, lists and objects as JSON. */
function fieldText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (Array.isArray(value) && value.every((m) => m && typeof m === 'object' && 'content' in m))
    return messagesText(value as { role?: string; content?: unknown }[]);
  return JSON.stringify(value ?? '');
}

/** A record log's outputs and grades by sample index: `sampling`, `match` and `metrics` events. */
async function recordLog(path: string): Promise<Map<number, { output?: string; grade?: string }>> {
  const out = new Map<number, { output?: string; grade?: string }>();
  const text = await readFile(path, 'utf8');
  for (const event of jsonLines(text, path, 'an event')) {
    const index = Number(/\.(\d+)$/.exec(String(event.sample_id ?? ''))?.[1]);
    if (!Number.isInteger(index)) continue;
    const entry = out.get(index) ?? {};
    const data = (event.data ?? {}) as Json;
    const sampled = Array.isArray(data.sampled) ? data.sampled[0] : data.sampled;
    if (event.type === 'sampling' && typeof sampled === 'string') entry.output ??= sampled;
    if (event.type === 'match') {
      if (typeof sampled === 'string') entry.output ??= sampled;
      if (typeof data.correct === 'boolean') entry.grade = data.correct ? 'pass' : 'fail';
    }
    if (event.type === 'metrics' && typeof data.score === 'number')
      entry.grade = data.score >= 1 ? 'pass' : 'fail';
    out.set(index, entry);
  }
  return out;
}

/** The choices a spec lists: a list, or a string of one-character choices (`"ABCDE"`). */
function choicesOf(spec: Json, where: string): string[] {
  const raw = spec.choice_strings;
  if (Array.isArray(raw)) return raw.map(String);
  if (typeof raw === 'string' && !raw.startsWith('from_n')) return [...raw];
  throw new ImportError(`${where}: choice_strings ${JSON.stringify(raw)} is not a list of choices`);
}

export async function importEvalsRegistry(
  file: string,
  options: { outputItems?: string } = {},
): Promise<ImportPlan> {
  const plan = emptyPlan('openai/evals registry');
  const registry = dirname(dirname(file));
  const evals = await yamlFile(file);
  const log = options.outputItems ? await recordLog(options.outputItems) : undefined;
  for (const [key, entry] of Object.entries(evals)) {
    const spec = entry as Json;
    if (typeof spec?.class !== 'string') continue;
    const className = spec.class.split(':').at(-1)!;
    const args = (spec.args ?? {}) as Json;
    const name = key
      .split('.')[0]!
      .toLowerCase()
      .replace(/[^a-z0-9_-]+/g, '-');
    const check = await checkOf(className, args, registry, name, plan);
    if (!check) continue;
    const dataFile = `data/${name}.jsonl`;
    const samples = await samplesOf(join(registry, 'data', String(args.samples_jsonl)));
    const renamings = (args.samples_renamings ?? {}) as Record<string, string>;
    const rows = samples.map((sample, i) => {
      const renamed = Object.fromEntries(Object.entries(sample).map(([k, v]) => [renamings[k] ?? k, v]));
      const row: Json = { id: String(i) };
      for (const [k, v] of Object.entries(renamed))
        row[columnName(k)] = k === 'ideal' ? JSON.stringify(Array.isArray(v) ? v : [v]) : fieldText(v);
      const logged = log?.get(i);
      if (log) {
        row.output = logged?.output ?? '';
        row.grade = logged?.grade ?? '';
      }
      return row;
    });
    plan.files[dataFile] = jsonl(rows);
    plan.suites.push({
      file: `${name}.suite.json`,
      suite: {
        version: 1,
        name,
        task: 'checks',
        dataset: { path: dataFile, ...(log ? { columns: { output: 'output' } } : {}) },
        checks: {
          ...(log ? {} : { prompt: 'answer.md' }),
          checks: [log ? { ...check, gold: 'grade' } : check],
        },
        backends: [BACKEND],
      },
    });
    plan.files[promptPath('answer.md')] ??=
      'Reply to the last message of this conversation.\n\n<input>{input}</input>\n';
  }
  if (plan.suites.length === 0 && plan.refused.length === 0)
    throw new ImportError(`${file}: no eval with a class`);
  plan.notes.push(
    `openai/evals names no model: the suites use ${BACKEND} to answer and to grade (set "backends" to the models you ran)`,
    "a sample's chat messages reach the model as one transcript in a data section (column input)",
  );
  return plan;
}

async function checkOf(
  className: string,
  args: Json,
  registry: string,
  name: string,
  plan: ImportPlan,
): Promise<Check | undefined> {
  const how = { Match: 'starts-with', Includes: 'includes', FuzzyMatch: 'fuzzy' }[className] as
    | 'starts-with'
    | 'includes'
    | 'fuzzy'
    | undefined;
  if (how)
    return {
      type: 'match',
      name: className.toLowerCase(),
      how,
      values: ['{ideal}'],
      ignoreCase: args.ignore_case === true,
      input: '{output}',
      not: false,
    };
  if (className !== 'ModelBasedClassify') {
    plan.refused.push({
      what: `eval ${name} (${className})`,
      reason: `class ${className} has no Assay equivalent`,
    });
    return undefined;
  }
  const specName = String(args.modelgraded_spec_file ?? args.modelgraded_spec);
  const specPath = join(registry, 'modelgraded', `${specName}.yaml`);
  if (!existsSync(specPath)) throw new ImportError(`model-graded spec ${specPath} not found`);
  const spec = (Object.values(await yamlFile(specPath))[0] ?? {}) as Json;
  if (typeof spec.prompt !== 'string') {
    plan.refused.push({
      what: `eval ${name}`,
      reason: `spec ${specName}'s prompt is a message list, not a text`,
    });
    return undefined;
  }
  if (args.multicomp_n !== undefined) {
    plan.refused.push({
      what: `eval ${name}`,
      reason: 'it compares several completions of one prompt (multicomp_n)',
    });
    return undefined;
  }
  const choices = choicesOf(spec, specPath);
  const constants = (args.modelgraded_spec_args ?? {}) as Record<string, unknown>;
  const outputs = new Set(
    Object.values((spec.input_outputs ?? { input: 'completion' }) as Record<string, string>),
  );
  // Constants of the eval (`modelgraded_spec_args`) are instructions, filled in as text; the
  // sample's fields and the output are data, each in a tag section.
  const withConstants = spec.prompt.replace(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (whole, field: string) =>
    field in constants ? String(constants[field]) : whole,
  );
  const converted = convertTemplate(
    withConstants,
    'python',
    (field) => (outputs.has(field) ? 'output' : columnName(field)),
    true,
  );
  if ('refuse' in converted) throw new ImportError(`${specPath}: ${converted.refuse}`);
  let prompt = converted.text;
  const appended = typeof args.eval_type === 'string' ? args.eval_type : undefined;
  if (appended) {
    const answer = ANSWER_PROMPTS[appended];
    if (!answer)
      throw new ImportError(`eval ${name}: eval_type ${appended} is not one of ${EVAL_TYPES.join(', ')}`);
    prompt += `\n\n${answer.replace('{choices}', choices.map((c) => `"${c}"`).join(' or '))}`;
  }
  const parsedAs = String(spec.eval_type ?? appended ?? 'cot_classify');
  if (!(EVAL_TYPES as readonly string[]).includes(parsedAs))
    throw new ImportError(`${specPath}: eval_type ${parsedAs} is not one of ${EVAL_TYPES.join(', ')}`);
  const file = `${name}-${specName}.md`;
  plan.files[promptPath(file)] = `${prompt}\n`;
  const scores =
    spec.choice_scores === 'from_strings'
      ? Object.fromEntries(choices.map((c) => [c, Number(c)]))
      : (spec.choice_scores as Record<string, number> | undefined);
  return {
    type: 'model',
    name: specName,
    prompt: file,
    choices,
    ...(scores ? { choiceScores: scores } : {}),
    evalType: parsedAs as (typeof EVAL_TYPES)[number],
    input: '{output}',
    not: false,
  };
}
