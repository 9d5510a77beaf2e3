/** The line `assay quickstart` shows when it picked a backend from the environment. */
import { AWS_REGION_VARS, firstSet } from '../shared/lib/providers/registry.js';
import { resolveProviderId } from '../shared/model/provider-ids.js';

/**
 * What the quickstart chose and how to choose otherwise, for a backend found by looking at the
 * environment; undefined for those that say so elsewhere (a key's own vendor, the simulator).
 * Bedrock has no key of its own: the model was picked here, so the line names it.
 */
export function quickstartBackendLine(backend: string, env: NodeJS.ProcessEnv): string | undefined {
  if (resolveProviderId(backend).vendor !== 'bedrock') return undefined;
  const region = firstSet(env, AWS_REGION_VARS);
  return (
    `quickstart: AWS credentials and region ${region} found, judging with ${backend} on Amazon Bedrock ` +
    '(enable access to it in the Bedrock console). ' +
    'Another model: assay quickstart --backend bedrock:<model-id>\n'
  );
}
