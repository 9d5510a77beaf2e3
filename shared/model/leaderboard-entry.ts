/**
 * Leaderboard entries read from files another program may have written or cut short: each is
 * checked for the shape the tables read, and a bad one is named with what is wrong.
 */
import { type LeaderboardEntry, leaderboardEntry, type Report } from './report.js';

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const isNumberOrNull = (v: unknown) => v === null || (typeof v === 'number' && Number.isFinite(v));

/**
 * What is wrong with `entry` as a leaderboard entry (the first field of the wrong type), or
 * undefined when the tables can show it: every field they read has its type.
 */
export function entryProblem(entry: unknown): string | undefined {
  if (!isObject(entry)) return 'not an object';
  for (const field of ['runId', 'suite', 'task', 'dataset', 'promptVersion', 'primaryScorer', 'finishedAt']) {
    if (typeof entry[field] !== 'string') return `${field} is not a string`;
  }
  if (!isObject(entry.config) || !Object.values(entry.config).every((v) => typeof v === 'string'))
    return 'config is not an object of strings';
  if (!Array.isArray(entry.backends) || !entry.backends.every((b) => typeof b === 'string'))
    return 'backends is not a list of strings';
  if (entry.predictions !== undefined && typeof entry.predictions !== 'string')
    return 'predictions is not a string';
  if (typeof entry.simulated !== 'boolean') return 'simulated is not true or false';
  if (!isObject(entry.metrics)) return 'metrics is not an object';
  for (const [name, m] of Object.entries(entry.metrics)) {
    if (!isObject(m) || !isNumberOrNull(m.value)) return `metric ${name} has no value`;
    if (m.ci !== undefined && !(Array.isArray(m.ci) && m.ci.length === 2 && m.ci.every(isNumberOrNull)))
      return `metric ${name} has an interval that is not two numbers`;
  }
  for (const field of ['items', 'scored']) {
    if (typeof entry[field] !== 'number') return `${field} is not a number`;
  }
  for (const field of ['per10kUsd', 'p50LatencyMs']) {
    if (!isNumberOrNull(entry[field])) return `${field} is not a number`;
  }
  return undefined;
}

/**
 * The leaderboard entry of a run's report.json as read (any JSON): throws an error saying what
 * is wrong when the report does not have the shape of one (written by something else, or cut).
 */
export function entryOfReport(report: unknown): LeaderboardEntry {
  if (!isObject(report)) throw new Error('report.json is not a report (not an object)');
  for (const field of ['scores', 'prompts', 'counts', 'cost', 'latencyMs']) {
    if (!isObject(report[field])) throw new Error(`report.json is not a report (${field} is not an object)`);
  }
  if (!Object.values(report.prompts as object).every((hash) => typeof hash === 'string'))
    throw new Error('report.json is not a report (a prompt hash is not a string)');
  let entry: LeaderboardEntry;
  try {
    entry = leaderboardEntry(report as unknown as Report);
  } catch (error) {
    throw new Error(`report.json is not a report (${(error as Error).message})`);
  }
  const problem = entryProblem(entry);
  if (problem) throw new Error(`report.json is not a report (${problem})`);
  return entry;
}
