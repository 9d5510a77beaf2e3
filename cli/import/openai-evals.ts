/**
 * OpenAI Evals exports as a suite: an eval's definition (`testing_criteria`, the graders), its
 * items (`{"item": …}` lines, optionally with a `sample`), a run's output items (the outputs and
 * each grader's grade, for `--check`), and optionally the run's definition (the model and the
 * messages it was asked with). Graders: `string_check`, `text_similarity`, `score_model`,
 * `label_model` and `multi`; any other (`python`, `endpoint`) is listed as refused with its reason.
 */
import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { type Check, SIMILARITY_METRICS } from '../../shared/families/checks/suite.js';
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

export interface OpenAiEvalsFiles {
  eval: string;
  items?: string;
  outputItems?: string;
  run?: string;
}

const OUTPUT = 'output';
/** The similarity metrics OpenAI's text_similarity and Assay share (promptfoo's BLEU is Assay's bleu_promptfoo). */
const SIMILARITY = new Set<string>(SIMILARITY_METRICS.filter((m) => m !== 'bleu_promptfoo'));

async function readJson(path: string, what: string): Promise<unknown> {
  const text = await readFile(path, 'utf8');
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ImportError(`${path}: ${what} is not JSON: ${(error as Error).message}`);
  }
}

/** A JSONL file, or a JSON array, or an API list (`{"object": "list", "data": […]}`). */
async function readRows(path: string, what: string): Promise<Json[]> {
  const text = await readFile(path, 'utf8');
  const trimmed = text.trim();
  if (
    trimmed.startsWith('[') ||
    (trimmed.startsWith('{') && /"object"\s*:\s*"list"/.test(trimmed.slice(0, 200)))
  ) {
    const parsed = await readJson(path, what);
    const rows = Array.isArray(parsed) ? parsed : (parsed as Json).data;
    if (Array.isArray(rows)) return rows as Json[];
  }
  return jsonLines(trimmed, path, what);
}

/** The value at a dot path, as text (objects and arrays as JSON); undefined when absent. */
function at(value: unknown, path: string): string | undefined {
  let v = value;
  for (const key of path.split('.')) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Json)[key];
  }
  if (v === undefined || v === null) return undefined;
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/** What the templates of the import read: item paths by column name. */
class Columns {
  readonly paths = new Map<string, string>();
  resolve = (expression: string): string | { refuse: string } => {
    if (expression === 'sample.output_text') return OUTPUT;
    if (expression.startsWith('sample.'))
      return { refuse: `reads {{${expression}}}: only the output text (sample.output_text) is imported` };
    const path = expression.replace(/^item\./, '');
    const name = columnName(path);
    const known = this.paths.get(name);
    if (known !== undefined && known !== path)
      return { refuse: `{{${expression}}} and {{item.${known}}} both make column ${name}` };
    this.paths.set(name, path);
    return name;
  };
}

function text(columns: Columns, template: unknown, where: string, tagged = false): string {
  if (typeof template !== 'string') throw new Refused(`${where} is not a text`);
  const converted = convertTemplate(template, 'mustache', columns.resolve, tagged);
  if ('refuse' in converted) throw new Refused(`${where} ${converted.refuse}`);
  return converted.text;
}

class Refused extends Error {}

/** A model grader's messages as a prompt file, and its backend. */
function graderPrompt(columns: Columns, criterion: Json, plan: ImportPlan, file: string): string {
  const input = criterion.input;
  if (!Array.isArray(input)) throw new Refused('its input is not a list of messages');
  const prompt = input.map((m: Json) => {
    const content = typeof m.content === 'string' ? m.content : (m.content as Json | undefined)?.text;
    return {
      role: String(m.role ?? 'user'),
      content: text(columns, content, `a ${String(m.role)} message`, true),
    };
  });
  plan.files[promptPath(file)] = `${messagesText(prompt)}\n`;
  return file;
}

function checkOf(
  criterion: Json,
  name: string,
  columns: Columns,
  plan: ImportPlan,
  backends: Set<string>,
): Check {
  const type = String(criterion.type);
  // A model grader's input is its messages; any other grader's, the text it checks.
  const input = () => text(columns, criterion.input ?? '{{sample.output_text}}', 'its input');
  switch (type) {
    case 'string_check': {
      const reference = text(columns, criterion.reference, 'its reference');
      const op = String(criterion.operation);
      if (op === 'eq' || op === 'ne' || op === 'neq')
        return {
          type: 'equals',
          name,
          input: input(),
          value: reference,
          not: op !== 'eq',
          ignoreCase: false,
          trim: false,
        };
      if (op === 'like' || op === 'ilike')
        return {
          type: 'contains',
          name,
          input: input(),
          values: [reference],
          mode: 'any',
          ignoreCase: op === 'ilike',
          not: false,
        };
      throw new Refused(`operation ${op} is not eq, ne, like or ilike`);
    }
    case 'text_similarity': {
      const metric = String(criterion.evaluation_metric);
      if (!SIMILARITY.has(metric))
        throw new Refused(
          `evaluation_metric ${metric} is not computed by Assay (it computes ${[...SIMILARITY].join(', ')})`,
        );
      return {
        type: 'similarity',
        name,
        input: input(),
        metric: metric as 'bleu',
        reference: text(columns, criterion.reference, 'its reference'),
        threshold: Number(criterion.pass_threshold ?? 0.5),
        not: false,
      };
    }
    case 'score_model':
    case 'label_model': {
      const model = `openai:${String(criterion.model ?? 'gpt-4o-mini')}`;
      backends.add(model);
      const prompt = graderPrompt(columns, criterion, plan, `${name}.md`);
      const base = {
        type: 'model',
        name,
        input: '{output}',
        prompt,
        backend: model,
        evalType: 'cot_classify',
        not: false,
      } as const;
      if (type === 'label_model')
        return {
          ...base,
          labels: criterion.labels as string[],
          passing: criterion.passing_labels as string[],
        };
      const range = (criterion.range as [number, number] | undefined) ?? [0, 1];
      return { ...base, range, threshold: Number(criterion.pass_threshold ?? range[1]) };
    }
    case 'multi': {
      const graders = criterion.graders as Record<string, Json> | undefined;
      if (!graders || typeof graders !== 'object') throw new Refused('it has no graders');
      const checks: Record<string, Check> = {};
      for (const [key, inner] of Object.entries(graders)) {
        const check = checkOf(inner, `${name}.${key}`, columns, plan, backends);
        if (check.type === 'formula') throw new Refused('a multi grader inside a multi grader');
        checks[key] = { ...check, name: undefined } as Check;
      }
      return {
        type: 'formula',
        name,
        input: '{output}',
        checks: checks as never,
        formula: String(criterion.calculate_output),
        threshold: Number(criterion.pass_threshold ?? 1),
        not: false,
      };
    }
    case 'python':
      throw new Refused('a python grader runs code Assay does not run; rewrite it as one of the checks');
    default:
      throw new Refused(`grader type ${type} has no Assay equivalent`);
  }
}

/** A grade another tool gave: `pass`/`fail`, blank when neither. */
const gradeText = (passed: unknown) => (passed === true ? 'pass' : passed === false ? 'fail' : '');

/** The result of an output item that is this criterion's (its name, or its name and an id). */
function resultOf(results: unknown, criterion: string, only: boolean): Json | undefined {
  if (!Array.isArray(results)) return undefined;
  return (
    (results as Json[]).find((r) => r.name === criterion || String(r.name).startsWith(`${criterion}-`)) ??
    (only && results.length === 1 ? (results[0] as Json) : undefined)
  );
}

export async function importOpenAiEvals(files: OpenAiEvalsFiles): Promise<ImportPlan> {
  const plan = emptyPlan('OpenAI Evals');
  const definition = (await readJson(files.eval, 'the eval definition')) as Json;
  const criteria = definition.testing_criteria;
  if (!Array.isArray(criteria) || criteria.length === 0)
    throw new ImportError(`${files.eval}: no testing_criteria (is it an eval definition?)`);
  const columns = new Columns();
  const backends = new Set<string>();
  const checks: Check[] = [];
  const named: { criterion: string; check: string }[] = [];
  for (const [i, criterion] of (criteria as Json[]).entries()) {
    const label = String(criterion.name ?? `${criterion.type} ${i + 1}`);
    const name = columnName(label);
    try {
      const check = checkOf(criterion, name, columns, plan, backends);
      checks.push(check);
      named.push({ criterion: label, check: name });
    } catch (error) {
      if (!(error instanceof Refused)) throw error;
      plan.refused.push({
        what: `grader ${JSON.stringify(label)} (${String(criterion.type)})`,
        reason: error.message,
      });
    }
  }
  if (checks.length === 0)
    throw new ImportError(
      `${files.eval}: no grader could be imported (${plan.refused.map((r) => `${r.what}: ${r.reason}`).join('; ')})`,
    );

  // The rows: a run's output items (outputs and grades), else the items file.
  let rows: { item: Json; output?: string; grades?: Record<string, string>; status?: string }[];
  if (files.outputItems) {
    const items = await readRows(files.outputItems, 'an output item');
    rows = items.map((o, i) => {
      if (typeof o.datasource_item !== 'object')
        throw new ImportError(
          `${files.outputItems}, item ${i + 1}: no datasource_item (is it a run's output items?)`,
        );
      const sample = o.sample as Json | undefined;
      const output = (sample?.output as Json[] | undefined)?.[0]?.content;
      const grades = Object.fromEntries(
        named.map(({ criterion, check }) => [
          check,
          gradeText(resultOf(o.results, criterion, named.length === 1)?.passed),
        ]),
      );
      return {
        item: { ...(o.datasource_item as Json), __id: o.datasource_item_id ?? i },
        ...(typeof output === 'string' ? { output } : {}),
        grades,
        status: String(o.status ?? ''),
      };
    });
  } else if (files.items) {
    rows = (await readRows(files.items, 'an item')).map((line, i) => {
      const item = (line.item ?? line) as Json;
      const output = (line.sample as Json | undefined)?.output_text;
      return { item: { ...item, __id: i }, ...(typeof output === 'string' ? { output } : {}) };
    });
  } else
    throw new ImportError(
      "give the eval's items (--items FILE) or a run's output items (--output-items FILE)",
    );

  // Who answers: the outputs given, else the run's model with its messages.
  const given = rows.every((r) => r.output !== undefined);
  let prompt: string | undefined;
  let answering: string | undefined;
  if (!given) {
    if (!files.run)
      throw new ImportError(
        `${rows.filter((r) => r.output === undefined).length} items have no output: give the run's output items (--output-items) or the run's definition (--run), whose model answers them`,
      );
    const run = (await readJson(files.run, 'the run definition')) as Json;
    const source = run.data_source as Json | undefined;
    const template = (source?.input_messages as Json | undefined)?.template;
    if (!Array.isArray(template))
      throw new ImportError(`${files.run}: no data_source.input_messages.template`);
    const messages = (template as Json[]).map((m) => ({
      role: String(m.role ?? 'user'),
      content: (() => {
        try {
          return text(columns, m.content, `a ${String(m.role)} message`, true);
        } catch (error) {
          throw new ImportError(`${files.run}: ${(error as Error).message}`);
        }
      })(),
    }));
    plan.files[promptPath('answer.md')] = `${messagesText(messages)}\n`;
    prompt = 'answer.md';
    answering = `openai:${String(source?.model ?? 'gpt-4o-mini')}`;
  }

  const withGrades = rows.some((r) => r.grades);
  const data = rows.map((r) => {
    const out: Json = { id: String(r.item.__id) };
    for (const [column, path] of columns.paths) out[column] = at(r.item, path) ?? '';
    if (given) out[OUTPUT] = r.output;
    for (const [check, grade] of Object.entries(r.grades ?? {})) out[`grade_${check}`] = grade;
    if (withGrades) out.grade = r.status === 'pass' || r.status === 'fail' ? r.status : '';
    return out;
  });
  plan.files['data.jsonl'] = jsonl(data);
  const name = columnName(String(definition.name ?? basename(files.eval, '.json'))).toLowerCase();
  plan.suites.push({
    file: `${name}.suite.json`,
    suite: {
      version: 1,
      name,
      task: 'checks',
      dataset: { path: 'data.jsonl', ...(given ? { columns: { output: OUTPUT } } : {}) },
      checks: {
        ...(prompt ? { prompt } : {}),
        checks: checks.map((c) =>
          withGrades && named.some((n) => n.check === c.name) ? { ...c, gold: `grade_${c.name}` } : c,
        ),
        // The whole item's grade is comparable only when every grader came over.
        ...(withGrades && plan.refused.length === 0 ? { gold: 'grade' } : {}),
      },
      backends: [...(answering ? [answering] : []), ...backends],
    },
  });
  if (given)
    plan.notes.push(`the outputs are the ones given (${rows.length} items); no model is asked for them`);
  if (backends.size > 0)
    plan.notes.push(
      "model graders answer in Assay's JSON contract (a label or a score, with a reason) after their own messages, which are sent as one prompt with the dataset text in tag sections",
    );
  return plan;
}
