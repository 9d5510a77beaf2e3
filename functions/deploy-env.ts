/**
 * The deployment's limits as the stack hands them to the functions (infra/config.ts sets these
 * variables from the CDK context): ingest's limits on an upload (its size, its budget, the
 * models it may call), the workers' daily spend limit. Unset or empty: no limit of that kind. A malformed value fails the cold start with
 * the variable's name.
 */
import { ConfigError } from '../shared/model/errors.js';
import { MODEL_ID_PATTERN } from '../shared/model/provider-ids.js';
import type { DeployLimits } from '../shared/use-cases/deploy-limits.js';

/** The variable behind each limit. */
export const DEPLOY_ENV = {
  maxItems: 'ASSAY_MAX_ITEMS_PER_UPLOAD',
  maxVariantsTimesRepeats: 'ASSAY_MAX_VARIANTS_TIMES_REPEATS',
  maxOutputTokens: 'ASSAY_MAX_OUTPUT_TOKENS',
  defaultBudgetUsd: 'ASSAY_DEFAULT_BUDGET_USD',
  maxRunBudgetUsd: 'ASSAY_MAX_RUN_BUDGET_USD',
  /** Models an upload may call: `vendor:model` ids separated by ","; `*`: any; unset or empty: the ones the price table prices. */
  allowedModels: 'ASSAY_ALLOWED_MODELS',
  dailySpendLimitUsd: 'ASSAY_DAILY_SPEND_LIMIT_USD',
  /** How long a worker takes a run it found running as still running, ms (default 5,000); tests set 0. */
  stopCacheMs: 'ASSAY_STOP_CACHE_MS',
} as const;

/** A non-negative number from `name`, undefined when unset or empty. */
function amount(env: NodeJS.ProcessEnv, name: string, integer: boolean): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return undefined;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0 || (integer && !Number.isInteger(value))) {
    throw new ConfigError(
      `Environment: ${name} must be ${integer ? 'a whole number' : 'a number'} ≥ 0 (0: no limit), got ${JSON.stringify(raw)}`,
    );
  }
  return value;
}

/** Ingest's limits on an upload. */
export function deployLimitsFromEnv(env: NodeJS.ProcessEnv): DeployLimits {
  const limits: DeployLimits = {
    maxItems: amount(env, DEPLOY_ENV.maxItems, true),
    maxVariantsTimesRepeats: amount(env, DEPLOY_ENV.maxVariantsTimesRepeats, true),
    maxOutputTokens: amount(env, DEPLOY_ENV.maxOutputTokens, true),
    defaultBudgetUsd: amount(env, DEPLOY_ENV.defaultBudgetUsd, false),
    maxRunBudgetUsd: amount(env, DEPLOY_ENV.maxRunBudgetUsd, false),
    allowedModels: allowedModels(env),
  };
  return Object.fromEntries(Object.entries(limits).filter(([, v]) => v)) as DeployLimits;
}

/** The models an upload may call: the list, `any` for `*`, undefined (the priced ones) when unset or empty. */
function allowedModels(env: NodeJS.ProcessEnv): DeployLimits['allowedModels'] {
  const name = DEPLOY_ENV.allowedModels;
  const raw = env[name]?.trim();
  if (!raw) return undefined;
  if (raw === '*') return 'any';
  const ids = raw
    .split(',')
    .map((id) => id.trim())
    .filter(Boolean);
  const bad = ids.find((id) => !MODEL_ID_PATTERN.test(id));
  if (bad !== undefined) {
    throw new ConfigError(
      `Environment: ${name} must be vendor:model ids separated by "," (or * for any model), got ${JSON.stringify(bad)}`,
    );
  }
  return ids;
}

/** The workers' daily spend limit across runs, USD; undefined when there is none. */
export function dailySpendLimitFromEnv(env: NodeJS.ProcessEnv): number | undefined {
  return amount(env, DEPLOY_ENV.dailySpendLimitUsd, false) || undefined;
}

/** How long a run found running is taken as running before its record is read again, ms. */
export function stopCacheMsFromEnv(env: NodeJS.ProcessEnv): number | undefined {
  return amount(env, DEPLOY_ENV.stopCacheMs, true);
}
