import { checksFamily } from '../families/checks/task.js';
import { cleanupFamily } from '../families/cleanup/task.js';
import { gecFamily } from '../families/gec/task.js';
import { judgeFamily } from '../families/judge/task.js';
import { qaFamily } from '../families/qa/task.js';
import { summarizationFamily } from '../families/summarization/task.js';
import { verdictsFamily } from '../families/verdicts/task.js';
import type { AnyTaskFamily } from '../family/types.js';
import { dataSections, PromptError, placeholders } from '../lib/prompts/prompts.js';
import { SIM_NO_ANSWER } from '../lib/providers/sim.js';
import { ConfigError } from '../model/errors.js';
import { SCORE_KINDS } from '../model/model.js';
import type { SimHint } from '../model/provider.js';
import { simulatedId } from '../model/provider-ids.js';
import { isPlainObject, mapSuiteBackends, mergeOptions } from '../model/variants.js';

/**
 * Every task family, by the name suites use in `task`. Adding a family is its folder plus one
 * line here. The registry checks itself at load (promptfoo's assertion registry does the same):
 * a family whose declarations contradict each other fails here, before any suite is read.
 */
export const FAMILIES: readonly AnyTaskFamily[] = [
  gecFamily,
  judgeFamily,
  qaFamily,
  cleanupFamily,
  summarizationFamily,
  checksFamily,
  verdictsFamily,
];

export class TaskRegistryError extends ConfigError {
  override readonly name = 'TaskRegistryError';
}

function checkFamilies(families: readonly AnyTaskFamily[]): void {
  const names = new Set<string>();
  for (const family of families) {
    if (names.has(family.name)) throw new TaskRegistryError(`two task families named ${family.name}`);
    names.add(family.name);
    for (const [role, spec] of Object.entries(family.roles)) {
      const listed = Array.isArray(spec.placeholders) ? spec.placeholders : [];
      const unknown = (spec.data ?? []).filter((name) => !listed.includes(name));
      if (unknown.length > 0) {
        throw new TaskRegistryError(
          `${family.name}: prompt role ${role} marks ${unknown.join(', ')} as data but does not list them as placeholders`,
        );
      }
    }
  }
}
checkFamilies(FAMILIES);

const byName = new Map(FAMILIES.map((family) => [family.name, family]));

export function familyNames(): string[] {
  return [...byName.keys()];
}

export function taskFor(suite: { task: string }): AnyTaskFamily {
  const family = byName.get(suite.task);
  if (!family) throw new TaskRegistryError(`unknown task ${suite.task} (known: ${familyNames().join(', ')})`);
  return family;
}

export function allTasks(): readonly AnyTaskFamily[] {
  return FAMILIES;
}

/**
 * The family's scorers for a suite, each checked: a known kind, and a primary scorer that
 * exists. Called where reports and comparisons are built.
 */
export function scorersOf(family: AnyTaskFamily, suite: Parameters<AnyTaskFamily['scorers']>[0]) {
  const scorers = family.scorers(suite);
  for (const [name, scorer] of Object.entries(scorers)) {
    if (!SCORE_KINDS.includes(scorer.kind))
      throw new TaskRegistryError(`${family.name}: scorer ${name} has unknown kind ${scorer.kind}`);
  }
  const primary = family.primaryScorer(suite);
  if (!(primary in scorers))
    throw new TaskRegistryError(`${family.name}: primary scorer ${primary} is not one of its scorers`);
  return { scorers, primary };
}

/**
 * A suite (as written, or parsed) as `--simulate` runs it: every backend — the suite's, each
 * variant's, the matrix's — and every model the family's block names put in the simulator's hands.
 */
export function simulateSuite<T extends Record<string, unknown>>(suite: T): T {
  const out = mapSuiteBackends(suite, simulatedId);
  const family = byName.get(String(suite.task));
  const hook = family?.simulateBlock;
  if (!family || !hook) return out as T;
  const block = (value: unknown) =>
    value && typeof value === 'object' ? hook(value as Record<string, unknown>) : value;
  if (out[family.name] !== undefined) out[family.name] = block(out[family.name]);
  if (Array.isArray(out.variants)) {
    out.variants = out.variants.map((v: Record<string, unknown>) => {
      const options = v.options as Record<string, unknown> | undefined;
      if (options?.[family.name] === undefined) return v;
      // The variant's block merges into the suite's (variantOverlay): the hook sees the whole
      // block the variant will run, so a default it fills in never hides a setting of the suite's.
      const own = options[family.name];
      const suiteBlock = suite[family.name];
      const whole = isPlainObject(suiteBlock) && isPlainObject(own) ? mergeOptions(suiteBlock, own) : own;
      return { ...v, options: { ...options, [family.name]: block(whole) } };
    });
  }
  return out as T;
}

/** The embedders and NLI models a suite's scorers run. */
export function encodersOf(suite: { task: string }) {
  const family = taskFor(suite);
  return family.encoders?.(suite as Parameters<AnyTaskFamily['scorers']>[0]) ?? [];
}

/** The simulator's answer to a request, from the family that made it (the request carries a JSON hint). */
export function simulateAnswer(hint: SimHint, rng: () => number, noise: number): string {
  const family = byName.get(hint.family);
  return family ? family.simulate(hint, rng, noise) : SIM_NO_ANSWER;
}

/** The family owning a prompt role, looked up as `role`, else its `family.` prefix (`grammar.de` → `grammar`). */
function roleSpec(family: AnyTaskFamily, role: string) {
  return family.roles[role] ?? family.roles[role.split('.')[0]!];
}

/** Names of the placeholders of `role` that carry untrusted text. */
export function dataPlaceholders(family: AnyTaskFamily, role: string): (name: string) => boolean {
  const spec = roleSpec(family, role);
  if (spec?.placeholders === 'columns') return () => true;
  const data = new Set(spec?.data ?? []);
  return (name) => data.has(name);
}

/**
 * Checks that each role's prompt text exists, uses only placeholders the family fills, and
 * keeps every data placeholder alone in a tag section. Runs before the first call of a run.
 */
export function verifyPrompts(
  family: AnyTaskFamily,
  paths: Record<string, string>,
  texts: Record<string, string | undefined>,
) {
  for (const [role, path] of Object.entries(paths)) {
    const spec = roleSpec(family, role);
    if (spec === undefined)
      throw new TaskRegistryError(`${family.name}: unknown prompt role ${role} (${path})`);
    const text = texts[path];
    if (text === undefined)
      throw new TaskRegistryError(`${family.name}: prompt file for ${role} not found: ${path}`);
    if (spec.placeholders === null) continue;
    if (spec.placeholders !== 'columns') {
      const allowed = spec.placeholders;
      const unknown = [...placeholders(text)].filter((name) => !allowed.includes(name));
      if (unknown.length > 0) {
        throw new TaskRegistryError(
          `${path}: unknown placeholder(s) ${unknown.map((n) => `{${n}}`).join(', ')}; ${role} prompts may use ${allowed.map((n) => `{${n}}`).join(', ')}`,
        );
      }
    }
    try {
      dataSections(text, dataPlaceholders(family, role), path);
    } catch (error) {
      if (error instanceof PromptError) throw new TaskRegistryError(error.message, { cause: error });
      throw error;
    }
  }
}
