/**
 * What a stored result may hold. A result is kept whole in one record of the run store (AWS: a
 * DynamoDB item, at most 400 KB; locally: a line of results.jsonl), so every text a result
 * carries that grows with the data or with the model's answer is bounded here, the same way in
 * both shells:
 *
 * - the item's stored inputs, its input fields and its other columns together, to
 *   `STORED_INPUT_CHARS` characters, the longest fields cut first;
 * - its output, its details and each score's explanation and details, by cutting their
 *   longest strings first (labels, numbers and the JSON's shape stay);
 * - its raw model text and its failure messages.
 *
 * A text cut keeps its opening, then `… [cut: <n> characters in all, sha256:<digest>]`: its
 * whole length and a digest of it (see `storedFieldLength`). The dataset keeps the full
 * text. What is left must be at most {@link STORED_RESULT_BYTES} as JSON; a result larger than
 * that (thousands of columns, say) is recorded as a `storage` failure saying so
 * ({@link storableResult}), so the item still ends as exactly one result and no store refuses it.
 */
import { type Failure, type ItemResult, inputDigest, type Score } from './model.js';
import {
  boundedJson,
  capText,
  STORED_DETAILS_CHARS,
  STORED_EXPLANATION_CHARS,
  STORED_FIELD_CHARS,
  STORED_INPUT_CHARS,
  STORED_MESSAGE_CHARS,
  STORED_OUTPUT_CHARS,
  STORED_RAW_CHARS,
  storedFields,
} from './stored-text.js';

/**
 * The most a stored result may be, as UTF-8 JSON bytes, in every shell. The caps of
 * stored-text.ts keep a result well under it; the AWS store carries a result larger than a DynamoDB item by S3
 * reference, up to this.
 */
export const STORED_RESULT_BYTES = 1024 * 1024;
/** DynamoDB's limit on one item (attribute names and values), bytes. */
export const DYNAMO_ITEM_BYTES = 400 * 1024;

/** A failure with its message bounded. */
function storedFailure(failure: Failure): Failure {
  return failure.message.length <= STORED_MESSAGE_CHARS
    ? failure
    : { ...failure, message: capText(failure.message, STORED_MESSAGE_CHARS) };
}

/** A score with its explanation, details and reason for being unscored bounded; its value stays. */
function storedScore(score: Score): Score {
  const stored: Score = { ...score };
  if (stored.explanation !== undefined)
    stored.explanation = capText(stored.explanation, STORED_EXPLANATION_CHARS);
  if (stored.details !== undefined) stored.details = boundedJson(stored.details, STORED_EXPLANATION_CHARS);
  if ('unscored' in stored) stored.unscored = storedFailure(stored.unscored);
  return stored;
}

/**
 * The result as a store keeps it: its inputs, output, details, scores' texts, raw text and
 * failure bounded as described above, and its input digest of the input as kept.
 */
export function storedResult(result: ItemResult): ItemResult {
  const { input, columns } = storedFields(result.input, result.columns);
  const stored: ItemResult = {
    ...result,
    input,
    ...(columns ? { columns } : {}),
    scores: Object.fromEntries(Object.entries(result.scores).map(([name, s]) => [name, storedScore(s)])),
  };
  if (input !== result.input) stored.inputDigest = inputDigest({ input, gold: result.gold });
  if (result.output !== undefined) stored.output = boundedJson(result.output, STORED_OUTPUT_CHARS);
  if (result.details !== undefined) stored.details = boundedJson(result.details, STORED_DETAILS_CHARS);
  if (result.raw !== undefined) stored.raw = capText(result.raw, STORED_RAW_CHARS);
  if (result.failure !== undefined) stored.failure = storedFailure(result.failure);
  return stored;
}

/** The least any one text or part of a result may hold (the caps above), characters. */
const SMALLEST_CAP_CHARS = Math.min(
  STORED_FIELD_CHARS,
  STORED_INPUT_CHARS,
  STORED_OUTPUT_CHARS,
  STORED_DETAILS_CHARS,
  STORED_EXPLANATION_CHARS,
  STORED_RAW_CHARS,
  STORED_MESSAGE_CHARS,
);

/** A result's size as stored: its JSON's UTF-8 bytes. */
export function resultBytes(result: ItemResult): number {
  return Buffer.byteLength(JSON.stringify(result));
}

/** Bytes as whole KB, rounded up (a result 1 byte over a limit is 1 KB over it). */
export const kb = (bytes: number) => Math.ceil(bytes / 1024);

/**
 * The result every store records for `result`: {@link storedResult}, or, when that is still
 * more than {@link STORED_RESULT_BYTES}, a `storage` failure of the item that says by how much,
 * keeping what the item spent (its stages), its gold and the digest of its input, and no
 * inputs, output or details. Applied before any store sees the result, so that each shell
 * records the same.
 */
export function storableResult(result: ItemResult): ItemResult {
  // A result whose whole JSON is within the smallest cap has every text within its own (each
  // part's JSON is a piece of the whole's): it is stored as it is, without a pass per part.
  if (JSON.stringify(result).length <= SMALLEST_CAP_CHARS) return result;
  const stored = storedResult(result);
  const bytes = resultBytes(stored);
  if (bytes <= STORED_RESULT_BYTES) return stored;
  const message =
    `the result of item ${JSON.stringify(result.itemId)} (row ${result.row}) is ${kb(bytes)} KB, ` +
    `${kb(bytes - STORED_RESULT_BYTES)} KB over the ${kb(STORED_RESULT_BYTES)} KB a stored result may hold, ` +
    'even with its long inputs, output and details cut; give the row fewer or shorter columns';
  return {
    schemaVersion: result.schemaVersion,
    runId: result.runId,
    itemId: result.itemId,
    row: result.row,
    status: 'failed',
    ...(result.gold !== undefined ? { gold: result.gold } : {}),
    input: {},
    inputDigest: stored.inputDigest ?? inputDigest(stored),
    failure: { kind: 'storage', message },
    scores: {},
    stages: result.stages,
    ...(result.prompts ? { prompts: result.prompts } : {}),
    simulated: result.simulated,
    finishedAt: result.finishedAt,
    ...(result.part ? { part: result.part } : {}),
  };
}
