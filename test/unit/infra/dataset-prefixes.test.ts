/**
 * The deploy-time list of dataset folders every suite may read (`-c datasetPrefixes=…`): checked
 * at synth, and set on the ingest function alone as ASSAY_DATASET_PREFIXES.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, type CfnElement } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, configFromContext, DEFAULT_CONFIG } from '../../../infra/config.js';
import { AssayStack } from '../../../infra/stack.js';

const CDK_CONTEXT = (
  JSON.parse(readFileSync(new URL('../../../infra/cdk.json', import.meta.url), 'utf8')) as {
    context: Record<string, unknown>;
  }
).context;
const outdirs: string[] = [];
afterAll(() => {
  for (const dir of outdirs) rmSync(dir, { recursive: true, force: true });
});

const contextOf = (context: Record<string, unknown>) => configFromContext(new App({ context }).node);

describe('datasetPrefixes', () => {
  it('reads folders under datasets/, with their trailing /', () => {
    expect(contextOf({}).datasetPrefixes).toBeUndefined();
    expect(contextOf({ datasetPrefixes: 'datasets/shared,datasets/public/' }).datasetPrefixes).toBe(
      'datasets/shared/,datasets/public/',
    );
  });

  it('refuses a folder outside datasets/, or all of it, naming the key', () => {
    for (const datasetPrefixes of ['reports/', 'datasets/', 'datasets/../suites/']) {
      expect(() => contextOf({ datasetPrefixes })).toThrow(ConfigError);
      expect(() => contextOf({ datasetPrefixes })).toThrow(/context "datasetPrefixes"/);
    }
  });

  it('sets ASSAY_DATASET_PREFIXES on the ingest function only', () => {
    const outdir = mkdtempSync(join(tmpdir(), 'assay-infra-test-'));
    outdirs.push(outdir);
    const app = new App({ outdir, context: { ...CDK_CONTEXT, 'aws:cdk:bundling-stacks': [] } });
    const stack = new AssayStack(app, 'AssayStack', {
      config: { ...DEFAULT_CONFIG, datasetPrefixes: 'datasets/shared/' },
    });
    const resources = Template.fromStack(stack).toJSON().Resources as Record<
      string,
      { Properties: { Environment?: { Variables: Record<string, unknown> } } }
    >;
    const env = (fn: { node: { defaultChild?: unknown } }) =>
      resources[stack.getLogicalId(fn.node.defaultChild as CfnElement)]!.Properties.Environment!.Variables;
    expect(env(stack.functions.ingest).ASSAY_DATASET_PREFIXES).toBe('datasets/shared/');
    expect(env(stack.functions.worker).ASSAY_DATASET_PREFIXES).toBeUndefined();
  }, 60_000);
});
