/**
 * A promptfoo config as a suite: its prompts and providers (several: a sweep of their
 * combinations), its tests (inline, or from CSV, JSONL, JSON or YAML files; `defaultTest`;
 * `vars`; `evaluateOptions.repeat`) and their assertions. Deterministic assertions and the
 * model-graded ones (llm-rubric, model-graded-closedqa, factuality, g-eval) become checks;
 * code (`javascript`, `python`, `webhook`) and the rest are listed as refused with their reason.
 *
 * Tests differ in their assertions; a suite's checks are the same for every item. So each
 * distinct assertion (its type, settings and place among the test's assertions of that type) is
 * one check, its value in a column of its own, and a test without it leaves that column blank:
 * the check is then not applicable there (`when`).
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import { parse as parseYaml } from 'yaml';
import type { Check } from '../../shared/families/checks/suite.js';
import { columnName, emptyPlan, ImportError, type ImportPlan, jsonLines, jsonl, promptPath } from './plan.js';

type Json = Record<string, unknown>;
interface Assertion {
  type: string;
  value?: unknown;
  threshold?: number;
  provider?: unknown;
  $ref?: string;
}
interface Test {
  description?: string;
  vars: Record<string, unknown>;
  assert: Assertion[];
}

const GRADER = 'openai:gpt-4o-mini';
const CODE = new Set(['javascript', 'python', 'webhook', 'ruby']);

/** The factuality and closed-QA grader prompts, as openai/evals' model-graded specs (fact, closedqa) and promptfoo ask them. */
const FACT_PROMPT = `You are comparing a submitted answer to an expert answer on a given question. Here is the data:
[BEGIN DATA]
************
[Question]: <input>{input}</input>
************
[Expert]: <ideal>{value}</ideal>
************
[Submission]: <output>{output}</output>
************
[END DATA]

Compare the factual content of the submitted answer with the expert answer. Ignore any differences in style, grammar, or punctuation.
The submitted answer may either be a subset or superset of the expert answer, or it may conflict with it. Determine which case applies. Answer the question by selecting one of the following options:
(A) The submitted answer is a subset of the expert answer and is fully consistent with it.
(B) The submitted answer is a superset of the expert answer and is fully consistent with it.
(C) The submitted answer contains all the same details as the expert answer.
(D) There is a disagreement between the submitted answer and the expert answer.
(E) The answers differ, but these differences don't matter from the perspective of factuality.

Answer the question by printing only a single choice from "A" or "B" or "C" or "D" or "E" (without quotes or punctuation) corresponding to the correct answer with no other text.
`;
const CLOSEDQA_PROMPT = `You are assessing a submitted answer on a given task based on a criterion. Here is the data:
[BEGIN DATA]
***
[Task]: <input>{input}</input>
***
[Submission]: <output>{output}</output>
***
[Criterion]: <criteria>{value}</criteria>
***
[END DATA]
Does the submission meet the criterion? First, write out in a step by step manner your reasoning about the criterion to be sure that your conclusion is correct. Avoid simply stating the correct answers at the outset. Then print only the single character "Y" or "N" (without quotes or punctuation) on its own line corresponding to the correct answer. At the end, repeat just the letter again by itself on a new line.

Reasoning:
`;
const RUBRIC_PROMPT = `You are grading an output according to a rubric. If the statement in the rubric is true of the output, the output passes.

<output>{output}</output>

<rubric>{value}</rubric>
`;
const GEVAL_PROMPT = `Rate the output against the criteria below, from 0 (not at all) to 10 (fully), reading the whole output before you rate it.

<criteria>{value}</criteria>

<input>{input}</input>

<output>{output}</output>
`;

/** The model-graded assertions: the grader prompt (`{value}`: the assertion's value) and how it answers. */
const GRADED: Record<string, { template: string; answer: (a: Assertion) => Record<string, unknown> }> = {
  'llm-rubric': {
    template: RUBRIC_PROMPT,
    answer: () => ({ labels: ['pass', 'fail'], passing: ['pass'] }),
  },
  'model-graded-closedqa': {
    template: CLOSEDQA_PROMPT,
    answer: () => ({ choices: ['Y', 'N'], evalType: 'cot_classify' }),
  },
  // promptfoo's factuality passes every choice but D (a disagreement).
  factuality: {
    template: FACT_PROMPT,
    answer: () => ({
      choices: ['A', 'B', 'C', 'D', 'E'],
      choiceScores: { A: 1, B: 1, C: 1, D: 0, E: 1 },
      evalType: 'classify',
    }),
  },
  // promptfoo's g-eval scores 0 to 10 and passes at its threshold (default 0.7) times 10.
  'g-eval': {
    template: GEVAL_PROMPT,
    answer: (a) => ({ range: [0, 10], threshold: (a.threshold ?? 0.7) * 10 }),
  },
};

/** `{{ var }}` filled with a test's vars (filters ignored); an unknown var stays as written. */
function render(template: string, vars: Record<string, unknown>): string {
  return template.replace(/\{\{\s*([A-Za-z_][\w.]*)\s*(?:\|[^{}]*)?\}\}/g, (whole, name: string) => {
    const v = vars[name];
    return v === undefined ? whole : typeof v === 'string' ? v : JSON.stringify(v);
  });
}

/** `file://x` as a path beside the config; undefined for an inline value. */
function fileRef(value: unknown, base: string): string | undefined {
  return typeof value === 'string' && value.startsWith('file://') ? resolve(base, value.slice(7)) : undefined;
}

async function readText(path: string): Promise<string> {
  if (!existsSync(path)) throw new ImportError(`${path} not found (named by the promptfoo config)`);
  return readFile(path, 'utf8');
}

/** promptfoo's `__expected` shorthand (`icontains: x`, `grade: rubric`, a plain value: equals). */
function expected(text: string): Assertion {
  const m = /^(not-)?([a-z-]+|fn|grade|eval):\s?([\s\S]*)$/.exec(text.trim());
  if (!m) return { type: 'equals', value: text };
  const [, not = '', type, value] = m;
  if (type === 'grade') return { type: `${not}llm-rubric`, value };
  if (type === 'fn' || type === 'eval') return { type: `${not}javascript`, value };
  return { type: `${not}${type}`, value };
}

async function testsFrom(value: unknown, base: string): Promise<Test[]> {
  if (value === undefined) return [];
  if (Array.isArray(value)) return (await Promise.all(value.map((v) => testsFrom(v, base)))).flat();
  const path = fileRef(value, base) ?? (typeof value === 'string' ? resolve(base, value) : undefined);
  if (!path) return [value as Test];
  const text = await readText(path);
  if (path.endsWith('.csv')) {
    const records = parseCsv(text, { columns: true, skip_empty_lines: true }) as Record<string, string>[];
    return records.map((record) => {
      const vars: Record<string, unknown> = {};
      const assert: Assertion[] = [];
      let description: string | undefined;
      for (const [k, v] of Object.entries(record)) {
        if (/^__expected\d*$/.test(k)) {
          if (v.trim() !== '') assert.push(expected(v));
        } else if (k === '__description') description = v;
        else if (!k.startsWith('__')) vars[k] = v;
      }
      return { ...(description ? { description } : {}), vars, assert };
    });
  }
  if (path.endsWith('.jsonl')) return jsonLines(text, path, 'a test') as unknown as Test[];
  const parsed = path.endsWith('.json') ? JSON.parse(text) : parseYaml(text);
  return testsFrom(parsed, dirname(path));
}

async function promptsFrom(value: unknown, base: string): Promise<string[]> {
  const list = Array.isArray(value) ? value : [value];
  const out: string[] = [];
  for (const entry of list) {
    const raw = typeof entry === 'object' && entry ? ((entry as Json).raw ?? (entry as Json).id) : entry;
    const path = fileRef(raw, base);
    if (path) out.push(...(await readText(path)).split(/^---$/m).map((p) => p.trim()));
    else if (typeof raw === 'string') out.push(raw);
  }
  if (out.length === 0) throw new ImportError('the promptfoo config has no prompts');
  return out;
}

/** A promptfoo provider id as Assay's: `openai:chat:gpt-4o` → `openai:gpt-4o`, `vertex:…` → `gemini:…`. */
export function providerId(id: string): string {
  const [vendor, ...rest] = id.split(':');
  const model = rest
    .filter((part) => !['chat', 'messages', 'completion', 'responses'].includes(part))
    .join(':');
  if (vendor === 'vertex' || vendor === 'google') return `gemini:${model}`;
  return `${vendor}:${model}`;
}

/** A test's assertion list, `$ref`s resolved. */
function assertions(list: Assertion[] | undefined, templates: Record<string, Assertion>): Assertion[] {
  return (list ?? []).map((a) => {
    if (!a.$ref) return a;
    const ref = templates[a.$ref.replace('#/assertionTemplates/', '')];
    if (!ref) throw new ImportError(`assertion $ref ${a.$ref} names no assertion template`);
    return ref;
  });
}

/** promptfoo's split of a contains-any list given as one text: commas, except inside quotes. */
function listOf(value: unknown): string[] {
  if (Array.isArray(value)) return value.map(String);
  return (String(value).match(/(".*?"|[^,]+)(?=\s*,|\s*$)/g) ?? []).map((v) =>
    v.trim().replace(/^"|"$/g, ''),
  );
}

/** One assertion as a check whose per-test texts read columns; the columns' values for a test come from `values`. */
interface Slot {
  key: string;
  check: Check;
  /** Each column the check reads, with its value for a test that has the assertion. */
  columns: Record<string, (a: Assertion, vars: Record<string, unknown>, prompt: string) => string>;
  /** The column that is blank where the test lacks the assertion. */
  when: string;
  /** A model check's grader prompt (`{value}`: the assertion's value). */
  template?: string;
}

function slotOf(a: Assertion, name: string, grader: string): Slot | { refuse: string } {
  const not = a.type.startsWith('not-');
  const type = not ? a.type.slice(4) : a.type;
  const value = `${name}_value`;
  const given = (x: Assertion, vars: Record<string, unknown>) =>
    render(typeof x.value === 'string' ? x.value : JSON.stringify(x.value ?? ''), vars);
  const base = { name, not, input: '{output}', when: value } as const;
  const slot = (check: Record<string, unknown>, columns: Slot['columns'] = { [value]: given }): Slot => ({
    key: name,
    check: { ...base, ...check } as unknown as Check,
    columns,
    when: value,
  });
  switch (type) {
    case 'equals':
      return slot({ type: 'equals', value: `{${value}}`, ignoreCase: false, trim: false });
    case 'contains':
    case 'icontains':
      return slot({
        type: 'contains',
        values: [`{${value}}`],
        mode: 'any',
        ignoreCase: type === 'icontains',
      });
    case 'contains-any':
    case 'contains-all':
    case 'icontains-any':
    case 'icontains-all':
      // The list is kept as JSON in its column: each member is looked for.
      return slot(
        {
          type: 'contains',
          values: [`{${value}}`],
          mode: type.endsWith('-all') ? 'all' : 'any',
          ignoreCase: type.startsWith('i'),
        },
        { [value]: (x, vars) => JSON.stringify(listOf(x.value).map((v) => render(v, vars))) },
      );
    case 'starts-with':
      return slot({ type: 'starts-with', value: `{${value}}` });
    case 'regex':
      return {
        refuse:
          "a regex differs per test; Assay checks one pattern per check (write it as the suite's regex check)",
      };
    case 'is-json':
    case 'contains-json':
      // No value: the column only marks the tests that have the assertion.
      return slot({ type: 'json', mode: type === 'is-json' ? 'is' : 'contains' }, { [value]: () => 'yes' });
    case 'levenshtein':
      return slot({ type: 'levenshtein', value: `{${value}}`, threshold: a.threshold || 5 });
    case 'rouge-n':
      return slot({
        type: 'similarity',
        metric: 'rouge_1',
        reference: `{${value}}`,
        threshold: a.threshold || 0.75,
      });
    case 'bleu':
      return slot({
        type: 'similarity',
        metric: 'bleu_promptfoo',
        reference: `{${value}}`,
        threshold: a.threshold ?? 0.5,
      });
    case 'llm-rubric':
    case 'model-graded-closedqa':
    case 'factuality':
    case 'g-eval': {
      const graded = GRADED[type]!;
      const made = slot(
        { type: 'model', prompt: `${name}.md`, backend: grader, ...graded.answer(a) },
        {
          // A list of criteria (g-eval's) is one text, a criterion a line.
          [value]: (x, vars) =>
            Array.isArray(x.value) ? x.value.map((v) => render(String(v), vars)).join('\n') : given(x, vars),
          ...(graded.template.includes('{input}') ? { prompt_text: (_x, _v, prompt) => prompt } : {}),
        },
      );
      return { ...made, template: graded.template };
    }
    default:
      if (CODE.has(type))
        return { refuse: `a ${type} assertion runs code Assay does not run; rewrite it as a check` };
      if (type === 'latency' || type === 'cost')
        return { refuse: `${type} is of the call Assay makes: use the gate's latency and cost conditions` };
      if (type === 'similar') return { refuse: 'embedding similarity is not imported' };
      return { refuse: `assertion type ${a.type} has no Assay equivalent` };
  }
}

/**
 * A promptfoo config (YAML), or a results file (`promptfoo eval -o results.json`), which holds
 * its config: then its outputs and grades are the rows, for `--check`.
 */
export async function importPromptfoo(
  file: string,
  options: { outputItems?: string } = {},
): Promise<ImportPlan> {
  const plan = emptyPlan('promptfoo');
  const base = dirname(resolve(file));
  let config: Json;
  let results: Json | undefined;
  const text = await readText(file);
  try {
    config = (parseYaml(text) ?? {}) as Json;
  } catch (error) {
    throw new ImportError(`${file}: not YAML: ${(error as Error).message}`);
  }
  if (isResults(config)) {
    results = config;
    config = (config.config ?? {}) as Json;
    if (!config.tests) throw new ImportError(`${file}: a results file without its config's tests`);
  } else if (options.outputItems) {
    const parsed = JSON.parse(await readText(options.outputItems)) as Json;
    if (!isResults(parsed)) throw new ImportError(`${options.outputItems}: not a promptfoo results file`);
    results = parsed;
  }
  const prompts = await promptsFrom(config.prompts, base);
  const providers = (Array.isArray(config.providers) ? config.providers : [config.providers ?? GRADER]).map(
    (p) => providerId(String(typeof p === 'object' && p ? (p as Json).id : p)),
  );
  const defaults = (config.defaultTest ?? {}) as Partial<Test> & { options?: Json };
  const templates = (config.assertionTemplates ?? {}) as Record<string, Assertion>;
  const graderOption = (defaults.options?.provider ?? undefined) as unknown;
  const grader = graderOption
    ? providerId(String(typeof graderOption === 'object' ? (graderOption as Json).id : graderOption))
    : GRADER;
  const tests: Test[] = (await testsFrom(config.tests, base)).map((t) => ({
    ...(t.description ? { description: t.description } : {}),
    vars: { ...(defaults.vars ?? {}), ...(t.vars ?? {}) },
    assert: [...assertions(defaults.assert, templates), ...assertions(t.assert, templates)],
  }));
  if (tests.length === 0) throw new ImportError(`${file}: no tests`);

  // One check per distinct assertion: its type and settings, and its place among the test's
  // assertions of that kind.
  const slots = new Map<string, Slot>();
  const placed = tests.map((test) => {
    const seen = new Map<string, number>();
    return test.assert.map((a) => {
      const signature = `${a.type}|${a.threshold ?? ''}`;
      const k = (seen.get(signature) ?? 0) + 1;
      seen.set(signature, k);
      const key = `${signature}|${k}`;
      if (!slots.has(key)) {
        const name = columnName(
          `${a.type}${k > 1 ? `_${k}` : ''}${a.threshold !== undefined ? `_${a.threshold}` : ''}`,
        ).replace(/-/g, '_');
        const made = slotOf(a, name, grader);
        if ('refuse' in made) {
          plan.refused.push({ what: `assertion ${a.type}`, reason: made.refuse });
          slots.set(key, undefined as never);
        } else slots.set(key, made);
      }
      return { key, a };
    });
  });
  const live = [...slots.values()].filter(Boolean);
  if (live.length === 0) throw new ImportError(`${file}: no assertion could be imported`);
  // A check every test has needs no `when`.
  for (const slot of live) {
    const everywhere = placed.every((list) => list.some((p) => slots.get(p.key) === slot));
    if (everywhere) delete (slot.check as { when?: string }).when;
  }
  // Each model check's prompt: its template, reading the check's value and the prompt asked.
  for (const slot of live) {
    if (slot.check.type !== 'model' || !slot.template) continue;
    plan.files[promptPath(slot.check.prompt)] = slot.template
      .replace('{value}', `{${slot.when}}`)
      .replace('<input>{input}</input>', '<prompt_text>{prompt_text}</prompt_text>');
  }

  // The prompts the model under test answers: `{{var}}` as a tagged column each.
  const promptFiles = prompts.map((p, i) => {
    const path = `prompt${prompts.length > 1 ? `-${i + 1}` : ''}.md`;
    plan.files[promptPath(path)] = `${p.replace(
      /\{\{\s*([A-Za-z_]\w*)\s*(?:\|[^{}]*)?\}\}/g,
      (_w, v: string) => {
        const c = columnName(v);
        return `<${c.toLowerCase()}>{${c}}</${c.toLowerCase()}>`;
      },
    )}\n`;
    return path;
  });

  const rowOf = (test: Test, i: number, list: (typeof placed)[number]) => {
    const row: Json = { id: String(i + 1) };
    if (test.description) row.description = test.description;
    for (const [k, v] of Object.entries(test.vars))
      row[columnName(k)] = typeof v === 'string' ? v : JSON.stringify(v);
    for (const slot of live) for (const column of Object.keys(slot.columns)) row[column] ??= '';
    for (const { key, a } of list) {
      const slot = slots.get(key);
      if (!slot) continue;
      for (const [column, value] of Object.entries(slot.columns))
        row[column] = value(a, test.vars, render(prompts[0]!, test.vars));
    }
    return row;
  };
  let rows = tests.map((t, i) => rowOf(t, i, placed[i]!));

  // A results file: its outputs and grades (each result a row), for --check.
  const withResults = results !== undefined;
  if (results) rows = resultRows(file, results, tests, placed, slots, rowOf);
  plan.files['data.jsonl'] = jsonl(rows);

  const repeat = Number((config.evaluateOptions as Json | undefined)?.repeat ?? 1);
  const name = columnName(String(config.description ?? 'promptfoo'))
    .toLowerCase()
    .slice(0, 60);
  const graded = live.some((s) => s.check.type === 'model');
  const combos = withResults
    ? []
    : promptFiles.flatMap((prompt, i) =>
        providers.map((provider) => ({
          prompt,
          provider,
          label: `${prompts.length > 1 ? `prompt${i + 1}-` : ''}${provider}`,
        })),
      );
  plan.suites.push({
    file: `${name}.suite.json`,
    suite: {
      version: 1,
      name,
      task: 'checks',
      dataset: { path: 'data.jsonl', ...(withResults ? { columns: { output: 'output' } } : {}) },
      checks: {
        ...(withResults ? {} : { prompt: promptFiles[0] }),
        checks: live.map((s) => (withResults ? { ...s.check, gold: `grade_${s.key}` } : s.check)),
        // The whole item's grade is comparable only when every grader came over.
        ...(withResults && plan.refused.length === 0 ? { gold: 'grade' } : {}),
      },
      backends: withResults ? (graded ? [grader] : []) : [providers[0], ...(graded ? [grader] : [])],
      ...(repeat > 1 ? { run: { repeats: repeat } } : {}),
      ...(combos.length > 1
        ? {
            variants: combos.map((c) => ({
              name: columnName(c.label),
              backends: [c.provider, ...(graded ? [grader] : [])],
              options: { checks: { prompt: c.prompt } },
            })),
          }
        : {}),
    },
  });
  if (graded)
    plan.notes.push(
      `model-graded assertions are asked of ${grader} in Assay's prompts (llm-rubric, g-eval) or openai/evals' (factuality, closed QA), with the dataset text in tag sections`,
    );
  if (tests.some((t) => Object.keys(t.vars).length === 0) && prompts.some((p) => /\{\{/.test(p)))
    plan.notes.push('some tests give no vars for the prompt: those rows are invalid');
  return plan;
}

/** Whether a parsed file is a promptfoo results file: `results.results`, a list. */
function isResults(parsed: Json): boolean {
  return Array.isArray((parsed.results as Json | undefined)?.results);
}

/** A promptfoo results file's results as rows: each one's output and its assertions' grades. */
function resultRows(
  path: string,
  file: Json,
  tests: Test[],
  placed: { key: string; a: Assertion }[][],
  slots: Map<string, Slot>,
  rowOf: (test: Test, i: number, list: { key: string; a: Assertion }[]) => Json,
): Json[] {
  const results = (file.results as Json).results as Json[];
  return results.map((r, n) => {
    const t = Number(r.testIdx);
    const test = tests[t];
    if (!test)
      throw new ImportError(`${path}, result ${n + 1}: testIdx ${r.testIdx} is not a test of the config`);
    const row = rowOf(test, t, placed[t]!);
    row.id = `${t + 1}.${r.promptIdx ?? 0}.${n + 1}`;
    const response = (r.response ?? {}) as Json;
    row.output =
      typeof response.output === 'string' ? response.output : JSON.stringify(response.output ?? '');
    const components = ((r.gradingResult as Json | undefined)?.componentResults ?? []) as Json[];
    for (const slot of slots.values()) if (slot) row[`grade_${slot.key}`] = '';
    placed[t]!.forEach(({ key }, j) => {
      const slot = slots.get(key);
      const pass = components[j]?.pass;
      if (slot && typeof pass === 'boolean') row[`grade_${slot.key}`] = pass ? 'pass' : 'fail';
    });
    row.grade = typeof r.success === 'boolean' ? (r.success ? 'pass' : 'fail') : '';
    return row;
  });
}
