/**
 * Declared limits: the `ASSAY_LIMITS` variable (`id=3000rpm,2000000tpm;other=50rpm`) and a
 * suite's `run.limits`, each keyed by resolved `vendor:model` or a wildcard (`llamacpp:*`).
 */
import { ConfigError } from '../../../model/errors.js';
import type { BackendLimit, RateLimit } from '../../../model/limits.js';
import { resolveKeyOrWildcard } from '../../../model/provider-ids.js';
import { matchById } from '../../../model/vendors.js';
import { stricter } from './bucket.js';

export class RateLimitSyntaxError extends ConfigError {
  override readonly name = 'RateLimitSyntaxError';
}

/**
 * Reads limits written as `id=3000rpm,2000000tpm;other-id=50rpm` (the `ASSAY_LIMITS` variable):
 * backends separated by `;`, each an id or alias, `=`, then comma-separated `<n>rpm` / `<n>tpm`.
 * Keys are resolved to `vendor:model`. Throws {@link RateLimitSyntaxError} naming the bad part.
 */
export function parseLimitSpec(text: string, source = 'ASSAY_LIMITS'): Record<string, RateLimit> {
  const out: Record<string, RateLimit> = {};
  for (const entry of text.split(';')) {
    if (!entry.trim()) continue;
    const eq = entry.lastIndexOf('=');
    const fail = (why: string): never => {
      throw new RateLimitSyntaxError(
        `${source}: "${entry.trim()}" ${why} (expected e.g. openai:gpt-4o-mini=3000rpm,2000000tpm; backends separated by ";")`,
      );
    };
    if (eq <= 0) fail('has no "=" between the backend and its limits');
    let id: string;
    try {
      id = resolveKeyOrWildcard(entry.slice(0, eq));
    } catch (error) {
      return fail(`names no known backend: ${(error as Error).message}`);
    }
    const limit: RateLimit = {};
    for (const part of entry.slice(eq + 1).split(',')) {
      const match = /^\s*(\d+(?:\.\d+)?)\s*(rpm|tpm)\s*$/i.exec(part);
      if (!match || Number(match[1]) <= 0)
        fail(`has "${part.trim()}", which is not a positive <n>rpm or <n>tpm`);
      limit[match![2]!.toLowerCase() as 'rpm' | 'tpm'] = Number(match![1]);
    }
    out[id] = stricter(out[id], limit)!;
  }
  return out;
}

/** The stricter of two declared limits, axis by axis, the calls in flight included. */
export function stricterDeclared(
  a: BackendLimit | undefined,
  b: BackendLimit | undefined,
): BackendLimit | undefined {
  if (!a) return b;
  if (!b) return a;
  const concurrency =
    a.concurrency === undefined
      ? b.concurrency
      : b.concurrency === undefined
        ? a.concurrency
        : Math.min(a.concurrency, b.concurrency);
  return { ...stricter(a, b), ...(concurrency === undefined ? {} : { concurrency }) };
}

/**
 * The declared limit that holds for a backend (resolved `vendor:model`) and the key it was
 * declared under: its own, else a wildcard's (`llamacpp:*`, `openai-compatible:local/*`), the
 * narrowest winning.
 */
export function declaredFor(
  limits: ReadonlyMap<string, BackendLimit> | Readonly<Record<string, BackendLimit>>,
  providerId: string,
): { key: string; value: BackendLimit } | undefined {
  return matchById(limits, providerId);
}

/**
 * Limits declared in a suite (`run.limits`, keyed by id, alias or wildcard) as a map by resolved
 * id. Computed once per suite object: the hot path looks a backend up in a Map.
 */
const resolvedSuiteLimits = new WeakMap<object, Map<string, BackendLimit>>();
export function suiteLimitsById(suiteRun: {
  limits?: Record<string, BackendLimit>;
}): Map<string, BackendLimit> {
  let byId = resolvedSuiteLimits.get(suiteRun);
  if (!byId) {
    byId = new Map();
    for (const [key, limit] of Object.entries(suiteRun.limits ?? {})) {
      const id = resolveKeyOrWildcard(key);
      byId.set(id, stricterDeclared(byId.get(id), limit)!);
    }
    resolvedSuiteLimits.set(suiteRun, byId);
  }
  return byId;
}
