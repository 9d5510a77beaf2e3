/**
 * Results files written by other evaluation tools, read as one verdict per row: promptfoo's
 * `results.json` (`promptfoo eval --output results.json`, results versions 2 and 3) and the
 * output items of an OpenAI Evals run (JSONL, a JSON array, or the list endpoint's
 * `{ object: "list", data: [...] }`). Each row is a test of one configuration (promptfoo: a
 * prompt and a provider; OpenAI Evals: a run) and says whether it passed, failed, or never got a
 * verdict because the tool met an error. A row that cannot be read is an error naming the file,
 * the row and the field: nothing is skipped in silence.
 */

import { createHash } from 'node:crypto';
import { InputError } from '../../model/errors.js';

export const TOOL_RESULT_FORMATS = ['promptfoo', 'openai-evals'] as const;
export type ToolResultFormat = (typeof TOOL_RESULT_FORMATS)[number];

/** What the tool decided for one row: an error is neither a pass nor a fail. */
export type ToolVerdict = 'pass' | 'fail' | 'error';

export interface ToolResultRow {
  /** 1-based position of the row in the file (its element, or its line for JSONL). */
  row: number;
  /** Where the row is in the file, for messages (`results.results[3]`, `line 4`). */
  where: string;
  /** The configuration the row belongs to (`prompt × provider`, or the run id). */
  config: string;
  /** The configuration's place in the tool's own list (promptfoo's `promptIdx`), when it gives one. */
  configIndex?: number;
  /** The test: the same id in every configuration, so configurations pair on it. */
  test: string;
  /** The test's inputs (its vars, the data source item) as JSON text. */
  input: string;
  /** What the model answered, when the file has it. */
  output?: string;
  verdict: ToolVerdict;
  /** Why it failed, or the error. */
  reason?: string;
  /** The tool's own score of the row, when it gives one. */
  score?: number;
  latencyMs?: number;
  costUsd?: number;
}

export interface ToolResults {
  format: ToolResultFormat;
  /** Every row, in file order. */
  rows: ToolResultRow[];
  /** The configurations in order of first appearance. */
  configs: string[];
}

export class ToolResultsError extends InputError {
  override readonly name = 'ToolResultsError';
}

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const nonEmpty = (value: unknown): value is string => typeof value === 'string' && value.trim() !== '';

const finite = (value: unknown): number | undefined =>
  typeof value === 'number' && Number.isFinite(value) ? value : undefined;

const text = (value: unknown): string | undefined =>
  value === undefined || value === null
    ? undefined
    : typeof value === 'string'
      ? value
      : JSON.stringify(value);

const shortHash = (value: string) => createHash('sha256').update(value).digest('hex').slice(0, 12);

/** Which tool wrote `content` (`name` tells JSONL apart); undefined when neither shape fits. */
export function detectFormat(name: string, content: string): ToolResultFormat | undefined {
  if (/\.jsonl$/i.test(name)) return 'openai-evals';
  let parsed: unknown;
  try {
    parsed = JSON.parse(content);
  } catch {
    // Not one JSON value: several lines of JSON are OpenAI Evals output items.
    const first = content.split('\n').find((line) => line.trim() !== '');
    try {
      return isObject(JSON.parse(first ?? '')) ? 'openai-evals' : undefined;
    } catch {
      return undefined;
    }
  }
  if (Array.isArray(parsed)) return isObject(parsed[0]) && 'run_id' in parsed[0] ? 'openai-evals' : undefined;
  if (!isObject(parsed)) return undefined;
  if (parsed.object === 'list' || parsed.object === 'eval.run.output_item' || Array.isArray(parsed.data))
    return 'openai-evals';
  if (
    'evalId' in parsed ||
    isObject(parsed.results) ||
    (Array.isArray(parsed.results) && 'version' in parsed)
  )
    return 'promptfoo';
  return undefined;
}

/** Reads a results file's content as `format` (or the format it has). `file` names it in errors. */
export function parseToolResults(file: string, content: string, format?: ToolResultFormat): ToolResults {
  const chosen = format ?? detectFormat(file, content);
  if (!chosen)
    throw new ToolResultsError(
      `${file}: not a promptfoo results.json nor OpenAI Evals output items (name the format with --format promptfoo|openai-evals)`,
    );
  const rows = chosen === 'promptfoo' ? promptfooRows(file, content) : openAiEvalRows(file, content);
  // The configurations in the tool's own order (promptfoo's prompts list), else as they come.
  const place = new Map<string, number>();
  for (const row of rows)
    place.set(
      row.config,
      Math.min(
        place.get(row.config) ?? Number.POSITIVE_INFINITY,
        row.configIndex ?? Number.POSITIVE_INFINITY,
      ),
    );
  const configs = [...place.keys()];
  const first = new Map(configs.map((config, i) => [config, i]));
  configs.sort((a, b) => place.get(a)! - place.get(b)! || first.get(a)! - first.get(b)!);
  return { format: chosen, rows, configs };
}

function parseJson(file: string, content: string, what: string): unknown {
  try {
    return JSON.parse(content);
  } catch (error) {
    throw new ToolResultsError(
      `${file}: not JSON (${(error as Error).message}); a ${what} is one JSON document`,
    );
  }
}

/** promptfoo's failure reasons (`failureReason`): 1 an assertion failed, 2 an error. */
const PROMPTFOO_ERROR = 2;

/**
 * promptfoo's results: `{ evalId, results: { version, prompts, results: [...] } }` (version 3),
 * or the summary itself, `{ version, results: [...] }` (version 2). A row's configuration is its
 * prompt (label, else raw text) and provider (label, else id); its test is `testIdx` (the test's
 * place in the suite, the same for every prompt and provider), else a digest of its vars.
 */
function promptfooRows(file: string, content: string): ToolResultRow[] {
  const top = parseJson(file, content, 'promptfoo results file');
  if (!isObject(top)) throw new ToolResultsError(`${file}: a promptfoo results file is a JSON object`);
  const summary = isObject(top.results) ? top.results : top;
  const base = summary === top ? 'results' : 'results.results';
  const list = summary.results;
  if (!Array.isArray(list))
    throw new ToolResultsError(
      `${file}: field ${base} is missing or not a list (promptfoo's results.json has one)`,
    );
  const prompts = Array.isArray(summary.prompts) ? summary.prompts : [];
  const parsed = list.map((entry, i) => {
    const where = `${base}[${i}]`;
    const fail = (field: string, why: string): never => {
      throw new ToolResultsError(`${file}: result ${i + 1} (${where}): field ${field} ${why}`);
    };
    if (!isObject(entry)) return fail('(the row)', 'is not an object');
    const providerField = entry.provider;
    const provider = nonEmpty(providerField)
      ? providerField
      : isObject(providerField)
        ? [providerField.label, providerField.id].find(nonEmpty)
        : undefined;
    if (provider === undefined) fail('provider', 'is missing (a string or { id, label })');
    const listed = typeof entry.promptIdx === 'number' ? prompts[entry.promptIdx] : undefined;
    const promptField = isObject(entry.prompt) ? entry.prompt : isObject(listed) ? listed : undefined;
    const prompt = promptField ? [promptField.label, promptField.raw].find(nonEmpty) : undefined;
    if (prompt === undefined) fail('prompt', 'is missing (an object with a label or raw text)');
    const vars = isObject(entry.vars)
      ? entry.vars
      : isObject(entry.testCase)
        ? entry.testCase.vars
        : undefined;
    const input = JSON.stringify(vars ?? {});
    const test =
      typeof entry.testIdx === 'number'
        ? String(entry.testIdx)
        : entry.testIdx === undefined
          ? `vars-${shortHash(input)}`
          : fail('testIdx', 'is not a number');
    const response = isObject(entry.response) ? entry.response : undefined;
    const grading = isObject(entry.gradingResult) ? entry.gradingResult : undefined;
    const errorText = [entry.error, response?.error].find(nonEmpty);
    // An error: promptfoo says so (failureReason 2); in files without failureReason, an error
    // with no grading at all. An assertion that failed also fills `error`: that is a fail.
    const errored =
      entry.failureReason === PROMPTFOO_ERROR ||
      (entry.failureReason === undefined && errorText !== undefined && grading === undefined);
    let verdict: ToolVerdict;
    if (errored) verdict = 'error';
    else if (typeof entry.success === 'boolean') verdict = entry.success ? 'pass' : 'fail';
    else if (typeof grading?.pass === 'boolean') verdict = grading.pass ? 'pass' : 'fail';
    else return fail('success', 'is missing or not true/false (and gradingResult.pass too)');
    const reason =
      verdict === 'error'
        ? (errorText ?? 'promptfoo recorded an error')
        : verdict === 'fail'
          ? ([grading?.reason, errorText].find(nonEmpty) ?? 'an assertion failed')
          : undefined;
    const output = text(response?.output);
    const score = finite(entry.score) ?? finite(grading?.score);
    const latencyMs = finite(entry.latencyMs);
    const costUsd = finite(entry.cost) ?? finite(response?.cost);
    return {
      row: i + 1,
      where,
      ...(typeof entry.promptIdx === 'number' ? { configIndex: entry.promptIdx } : {}),
      prompt: prompt as string,
      provider: provider as string,
      test,
      input,
      verdict,
      ...(output !== undefined ? { output } : {}),
      ...(reason !== undefined ? { reason } : {}),
      ...(score !== undefined ? { score } : {}),
      ...(latencyMs !== undefined ? { latencyMs } : {}),
      ...(costUsd !== undefined ? { costUsd } : {}),
    };
  });
  // A configuration is named by what tells it apart: the provider when every row has the same
  // prompt, the prompt when every row has the same provider, else both.
  const oneProvider = new Set(parsed.map((r) => r.provider)).size === 1;
  const onePrompt = new Set(parsed.map((r) => r.prompt)).size === 1;
  return parsed.map(({ prompt, provider, ...row }) => ({
    ...row,
    config: onePrompt ? provider : oneProvider ? prompt : `${prompt} × ${provider}`,
  }));
}

/**
 * OpenAI Evals output items: the list endpoint's `{ object: "list", data: [...] }`, a JSON
 * array of items, or JSONL (an item a line). A row's configuration is its run (`run_id`), its
 * test the data source item (`datasource_item_id`). It passes when every grader result passed
 * (with no grader results, when its `status` is `pass`); an item whose `status` is `error` or
 * whose sample carries an error, with no grader results, is an error.
 */
function openAiEvalRows(file: string, content: string): ToolResultRow[] {
  let items: { value: unknown; where: string }[];
  let whole: unknown;
  try {
    whole = JSON.parse(content);
  } catch {
    whole = undefined;
  }
  if (isObject(whole) && Array.isArray(whole.data))
    items = whole.data.map((value, i) => ({ value, where: `data[${i}]` }));
  else if (Array.isArray(whole)) items = whole.map((value, i) => ({ value, where: `[${i}]` }));
  else if (isObject(whole)) items = [{ value: whole, where: 'line 1' }];
  else {
    items = [];
    const lines = content.split('\n');
    for (const [i, line] of lines.entries()) {
      if (line.trim() === '') continue;
      try {
        items.push({ value: JSON.parse(line), where: `line ${i + 1}` });
      } catch (error) {
        throw new ToolResultsError(`${file}: line ${i + 1} is not JSON (${(error as Error).message})`);
      }
    }
  }
  return items.map(({ value, where }, i) => {
    const fail = (field: string, why: string): never => {
      throw new ToolResultsError(`${file}: output item ${i + 1} (${where}): field ${field} ${why}`);
    };
    if (!isObject(value)) return fail('(the item)', 'is not an object');
    if (value.object !== undefined && value.object !== 'eval.run.output_item')
      fail('object', `is ${JSON.stringify(value.object)}, not "eval.run.output_item"`);
    const run = nonEmpty(value.run_id) ? value.run_id : fail('run_id', 'is missing');
    const itemId = value.datasource_item_id;
    const test =
      typeof itemId === 'number' || nonEmpty(itemId)
        ? String(itemId)
        : fail('datasource_item_id', 'is missing');
    const graders = value.results ?? [];
    if (!Array.isArray(graders)) return fail('results', 'is not a list');
    const passed = graders.map((grader, g) => {
      if (!isObject(grader) || typeof grader.passed !== 'boolean')
        return fail(`results[${g}].passed`, 'is missing or not true/false');
      return {
        name: nonEmpty(grader.name) ? grader.name : `grader ${g + 1}`,
        passed: grader.passed,
        score: finite(grader.score),
      };
    });
    const sample = isObject(value.sample) ? value.sample : undefined;
    const sampleError = isObject(sample?.error)
      ? [sample.error.message, sample.error.code].find(nonEmpty)
      : undefined;
    const status = value.status;
    let verdict: ToolVerdict;
    if (passed.length > 0) verdict = passed.every((p) => p.passed) ? 'pass' : 'fail';
    else if (status === 'error' || sampleError !== undefined) verdict = 'error';
    else if (status === 'pass' || status === 'fail') verdict = status;
    else return fail('status', `is ${JSON.stringify(status)} and there are no grader results to decide`);
    const failed = passed.filter((p) => !p.passed);
    const reason =
      verdict === 'error'
        ? (sampleError ?? 'the run recorded an error for this item')
        : verdict === 'fail'
          ? failed.length > 0
            ? `failed: ${failed.map((p) => (p.score === undefined ? p.name : `${p.name} (score ${p.score})`)).join(', ')}`
            : 'status fail'
          : undefined;
    const outputs = Array.isArray(sample?.output) ? sample.output : [];
    const output = outputs
      .map((message) => (isObject(message) ? text(message.content) : undefined))
      .filter((c): c is string => c !== undefined)
      .join('\n');
    const scores = passed.map((p) => p.score).filter((s): s is number => s !== undefined);
    return {
      row: i + 1,
      where,
      config: run,
      test,
      input: JSON.stringify(value.datasource_item ?? {}),
      verdict,
      ...(outputs.length > 0 ? { output } : {}),
      ...(reason !== undefined ? { reason } : {}),
      ...(scores.length > 0 ? { score: scores.reduce((a, b) => a + b, 0) / scores.length } : {}),
    };
  });
}
