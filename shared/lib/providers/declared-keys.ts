import { ConfigError } from '../../model/errors.js';
import { MissingCredentialsError } from '../../model/provider-errors.js';

/**
 * The provider keys a deployment declares its secret holds, by name (CDK context `providerKeys`,
 * ingest's `ASSAY_PROVIDER_KEYS`). Ingest parses untrusted uploads and so never reads the
 * secret: it refuses a suite whose backend needs a key the deployment does not declare, and the
 * worker, which does read the secret, calls the vendor with the value.
 */

/** An environment variable's name, as the providers read their keys (`OPENAI_API_KEY`). */
const VARIABLE_NAME = /^[A-Z][A-Z0-9_]*$/;

/**
 * What ingest's check puts in place of a declared key: building a provider needs a value, and
 * ingest never calls one, so it holds none of the secret's.
 */
export const DECLARED_KEY_PLACEHOLDER = 'declared-in-the-provider-secret';

/**
 * The declared key names: comma-separated (`OPENAI_API_KEY,ANTHROPIC_API_KEY`), each once,
 * sorted. A name that is not an environment variable's is a {@link ConfigError} naming it.
 */
export function parseProviderKeyNames(text: string | undefined, setting = 'ASSAY_PROVIDER_KEYS'): string[] {
  const names = new Set<string>();
  for (const raw of (text ?? '').split(',')) {
    const name = raw.trim();
    if (name === '') continue;
    if (!VARIABLE_NAME.test(name))
      throw new ConfigError(
        `${setting}: ${JSON.stringify(name)} is not an environment variable name (e.g. OPENAI_API_KEY): list the names of the keys the provider secret holds, separated by ","`,
      );
    names.add(name);
  }
  return [...names].sort();
}

/**
 * The environment ingest checks a suite's backends against: the process's own variables (a key
 * set there, as `assay cloud` sets the machine's, counts), with each declared key standing in
 * by {@link DECLARED_KEY_PLACEHOLDER}.
 */
export function declaredKeyEnv(env: NodeJS.ProcessEnv, declared: readonly string[]): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = { ...env };
  for (const name of declared) if (!out[name]?.trim()) out[name] = DECLARED_KEY_PLACEHOLDER;
  return out;
}

/**
 * Runs `check` (which builds the suite's providers); a key it misses is told as the deployment
 * sees it: which keys the secret is declared to hold, and how to declare another.
 */
export function withDeclaredKeys<T>(declared: readonly string[], check: () => T): T {
  try {
    return check();
  } catch (error) {
    if (!(error instanceof MissingCredentialsError)) throw error;
    const holds = declared.length === 0 ? 'no key' : declared.join(', ');
    throw new MissingCredentialsError(
      error.providerId,
      error.variables,
      `${error.message}: this deployment declares ${holds} in its provider secret (CDK context providerKeys); put ${error.variables[0]} in the secret and deploy with -c providerKeys=${[...declared, error.variables[0]].join(',')}`,
    );
  }
}
