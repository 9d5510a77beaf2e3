/**
 * The variants of a sweep: the listed ones, then the matrix's product, each an overlay on the
 * suite. Pure: turning a variant into a validated suite is registry/suite.ts's `variantSuites`.
 */
import type { z } from 'zod';
import type { variantSchema } from './suite-base.js';

export type Variant = z.infer<typeof variantSchema>;

/** What `matrix` may list: every combination becomes a variant. */
export interface Matrix {
  backends?: string[][];
  params?: Record<string, unknown[]>;
  prompts?: Record<string, string[]>;
  options?: Record<string, unknown[]>;
}

/** The suite keys a sweep uses; a variant's own suite has none of them. */
export const SWEEP_KEYS = ['variants', 'matrix', 'baseline', 'gate', 'rankBy'] as const;

/** A readable, valid name part for a value: `openai:gpt-4o-mini` → `gpt-4o-mini`, 0.7 → `0.7`. */
function namePart(value: unknown): string {
  const text = Array.isArray(value)
    ? value.map((v) => String(v).slice(String(v).indexOf(':') + 1)).join('-')
    : typeof value === 'object'
      ? JSON.stringify(value)
      : String(value);
  const safe = text.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^[^A-Za-z0-9]+/, '');
  return safe || 'x';
}

/** The matrix as variants: the product of every dimension, named after its choices. */
export function expandMatrix(matrix: Matrix | undefined): Variant[] {
  if (!matrix) return [];
  type Choice = { name: string; apply: (v: Variant) => Variant };
  const dimensions: Choice[][] = [];
  if (matrix.backends) {
    dimensions.push(
      matrix.backends.map((backends) => ({ name: namePart(backends), apply: (v) => ({ ...v, backends }) })),
    );
  }
  for (const [key, values] of Object.entries(matrix.params ?? {})) {
    dimensions.push(
      values.map((value) => ({
        name: `${key}-${namePart(value)}`,
        apply: (v) => ({ ...v, params: { ...v.params, [key]: value } }),
      })),
    );
  }
  for (const [role, paths] of Object.entries(matrix.prompts ?? {})) {
    dimensions.push(
      paths.map((path) => ({
        name: `${role}-${namePart(
          path
            .replace(/\.[a-z]+$/i, '')
            .split('/')
            .at(-1),
        )}`,
        apply: (v) => ({ ...v, prompts: { ...v.prompts, [role]: path } }),
      })),
    );
  }
  for (const [key, values] of Object.entries(matrix.options ?? {})) {
    dimensions.push(
      values.map((value) => ({
        name: `${key}-${namePart(value)}`,
        apply: (v) => ({ ...v, options: { ...v.options, [key]: value } }),
      })),
    );
  }
  let variants: Variant[] = [{ name: '' }];
  for (const choices of dimensions) {
    variants = variants.flatMap((variant) =>
      choices.map((choice) => {
        const next = choice.apply(variant);
        return { ...next, name: variant.name ? `${variant.name}_${choice.name}` : choice.name };
      }),
    );
  }
  return dimensions.length === 0 ? [] : variants;
}

/** Whether a suite is a sweep: it lists variants, or a matrix of them. */
export function isSweep(suite: { variants?: unknown; matrix?: unknown }): boolean {
  return suite.variants !== undefined || suite.matrix !== undefined;
}

/** Every variant of a suite, listed first, then the matrix's; empty when the suite is not a sweep. */
export function allVariants(suite: { variants?: Variant[]; matrix?: Matrix }): Variant[] {
  return [...(suite.variants ?? []), ...expandMatrix(suite.matrix)];
}

export const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * `overlay` merged into `base`, key by key and as deep as both sides are objects; an array or a
 * scalar in the overlay replaces what the base has. Neither argument is changed.
 */
export function mergeOptions(
  base: Record<string, unknown>,
  overlay: Record<string, unknown> | undefined,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(overlay ?? {})) {
    const current = out[key];
    out[key] = isPlainObject(current) && isPlainObject(value) ? mergeOptions(current, value) : value;
  }
  return out;
}

/**
 * The suite of one variant, before validation: the overlay applied, the sweep keys removed. The
 * variant's `options` merge into the suite (a judge block that names only a new prompt keeps the
 * suite's labels); its `params` and `prompts` add to the suite's, key by key.
 */
export function variantOverlay<S extends Record<string, unknown>>(
  suite: S,
  variant: Variant,
): Record<string, unknown> {
  const base: Record<string, unknown> = { ...suite };
  for (const key of SWEEP_KEYS) delete base[key];
  return {
    ...mergeOptions(base, variant.options),
    name: `${String(suite.name)}.${variant.name}`,
    ...(variant.description ? { description: variant.description } : {}),
    backends: variant.backends ?? suite.backends,
    params: { ...(suite.params as object), ...variant.params },
    prompts: { ...(suite.prompts as object), ...variant.prompts },
  };
}

/**
 * A suite as written (raw JSON) with every backend mapped: the suite's own, each variant's and
 * the matrix's (`--simulate` puts the simulator in for each before the suite is uploaded).
 */
export function mapSuiteBackends(
  raw: Record<string, unknown>,
  map: (backend: string) => string,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...raw };
  const mapAll = (list: unknown) => (Array.isArray(list) ? list.map((b) => map(String(b))) : list);
  if (raw.backends !== undefined) out.backends = mapAll(raw.backends);
  if (Array.isArray(raw.variants)) {
    out.variants = raw.variants.map((v: Record<string, unknown>) =>
      v.backends === undefined ? v : { ...v, backends: mapAll(v.backends) },
    );
  }
  const matrix = raw.matrix as { backends?: unknown[] } | undefined;
  if (matrix?.backends) out.matrix = { ...matrix, backends: matrix.backends.map(mapAll) };
  return out;
}
