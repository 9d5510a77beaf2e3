/**
 * What the deployment lets each function do and spend: its DynamoDB actions are exactly those its
 * code sends (no Scan anywhere, DeleteItem only where a run's marks are deleted), a `*` resource
 * appears only with X-Ray's actions (acknowledged on that one statement's policy, nowhere
 * else), Bedrock only on the deploy's model list, and the deploy limits reach the functions.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, type CfnElement, Validations } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as iam from 'aws-cdk-lib/aws-iam';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEPLOY_ENV, dailySpendLimitFromEnv, deployLimitsFromEnv } from '../../../functions/deploy-env.js';
import {
  type AssayConfig,
  ConfigError,
  configFromContext,
  DEFAULT_CONFIG,
  spendLimitEnv,
  uploadLimitsEnv,
} from '../../../infra/config.js';
import { inferenceProfileModel } from '../../../infra/constructs/functions.js';
import { addNagChecks } from '../../../infra/nag.js';
import { AssayStack } from '../../../infra/stack.js';
import { TABLE_ACCESS } from '../../../infra/table-access.js';

const CDK_CONTEXT: Record<string, unknown> = JSON.parse(
  readFileSync(new URL('../../../infra/cdk.json', import.meta.url), 'utf8'),
).context;

type Resources = Record<string, { Type: string; Properties: Record<string, unknown> }>;
interface Statement {
  Effect: string;
  Action: string | string[];
  Resource: unknown;
}
type Name = keyof AssayStack['functions'];

const outdirs: string[] = [];
afterAll(() => {
  for (const dir of outdirs) rmSync(dir, { recursive: true, force: true });
});

function synthesize(config: AssayConfig, edit?: (stack: AssayStack) => void) {
  const outdir = mkdtempSync(join(tmpdir(), 'assay-iam-test-'));
  outdirs.push(outdir);
  const app = new App({ outdir, context: { ...CDK_CONTEXT, 'aws:cdk:bundling-stacks': [] } });
  const stack = new AssayStack(app, 'AssayStack', { config });
  edit?.(stack);
  addNagChecks(app);
  return { stack, template: Template.fromStack(stack) };
}

const actionsOf = (s: Statement) => (Array.isArray(s.Action) ? s.Action : [s.Action]);
const resourcesOf = (s: Statement) => (Array.isArray(s.Resource) ? s.Resource : [s.Resource]);

function statementsOf(stack: AssayStack, template: Template, name: Name): Statement[] {
  const roleId = stack.getLogicalId(stack.functions[name].role!.node.defaultChild as CfnElement);
  return Object.values(template.findResources('AWS::IAM::Policy') as Resources)
    .filter((policy) =>
      (policy.Properties.Roles as unknown[]).some(
        (r) => JSON.stringify(r) === JSON.stringify({ Ref: roleId }),
      ),
    )
    .flatMap((policy) => (policy.Properties.PolicyDocument as { Statement: Statement[] }).Statement);
}

function nagFindings(scope: IConstruct): string[] {
  return new AwsSolutionsChecks()
    .validateScope(scope)
    .violations.map((v) => `${v.ruleName}: ${v.violatingResources.map((r) => r.constructPath)}`);
}

describe('function permissions at the defaults', () => {
  let stack: AssayStack;
  let template: Template;
  const names = () => Object.keys(stack.functions) as Name[];

  beforeAll(() => {
    ({ stack, template } = synthesize(DEFAULT_CONFIG));
  }, 180_000);

  it('grants each function exactly the DynamoDB actions its code sends: no Scan anywhere, DeleteItem only to the aggregate and the batch poller', () => {
    for (const name of names()) {
      const dynamo = statementsOf(stack, template, name)
        .flatMap(actionsOf)
        .filter((a) => a.startsWith('dynamodb:'));
      expect([...dynamo].sort(), name).toEqual(TABLE_ACCESS[name].map((a) => `dynamodb:${a}`).sort());
      expect(dynamo, name).not.toContain('dynamodb:Scan');
    }
    const deleters = names().filter((name) =>
      statementsOf(stack, template, name).flatMap(actionsOf).includes('dynamodb:DeleteItem'),
    );
    expect(deleters.sort()).toEqual(['aggregate', 'batchPoller']);
    expect(TABLE_ACCESS.watchdog).not.toContain('PutItem');
  });

  it('uses Resource "*" only in X-Ray statements (EMF metrics go through the logs: no PutMetricData)', () => {
    for (const name of names()) {
      const starred = statementsOf(stack, template, name).filter((s) => resourcesOf(s).includes('*'));
      expect(starred.length, name).toBe(1);
      for (const statement of starred)
        expect(actionsOf(statement).sort(), name).toEqual([
          'xray:PutTelemetryRecords',
          'xray:PutTraceSegments',
        ]);
      expect(statementsOf(stack, template, name).flatMap(actionsOf), name).not.toContain(
        'cloudwatch:PutMetricData',
      );
    }
  });

  it('acknowledges the "*" finding on the tracing policy alone, never on a role', () => {
    const acknowledgedOn = stack.node
      .findAll()
      .filter((c) =>
        c.node.metadata.some(
          (m) =>
            m.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY &&
            Object.keys(m.data as object).some((id) => id.endsWith('AwsSolutions-IAM5[Resource::*]')),
        ),
      );
    expect(acknowledgedOn.length).toBe(6);
    for (const construct of acknowledgedOn) {
      expect(construct).toBeInstanceOf(iam.Policy);
      expect(construct.node.id).toMatch(/TracingPolicy$/);
    }
  });

  it('gives no function any Bedrock action when bedrockModels is empty', () => {
    for (const name of names())
      expect(
        statementsOf(stack, template, name)
          .flatMap(actionsOf)
          .filter((a) => a.startsWith('bedrock:')),
        name,
      ).toEqual([]);
  });

  it('hands the deploy limits to ingest and the daily limit to the workers, and alarms at 80 % of it', () => {
    const variables = (name: Name) =>
      (
        (template.toJSON().Resources as Resources)[
          stack.getLogicalId(stack.functions[name].node.defaultChild as CfnElement)
        ]!.Properties.Environment as { Variables: Record<string, string> }
      ).Variables;
    expect(variables('ingest')).toMatchObject({
      ASSAY_MAX_ITEMS_PER_UPLOAD: '10000000',
      ASSAY_MAX_VARIANTS_TIMES_REPEATS: '50',
      ASSAY_MAX_OUTPUT_TOKENS: '4096',
      ASSAY_DEFAULT_BUDGET_USD: '100',
    });
    expect(variables('worker')).toMatchObject({ ASSAY_DAILY_SPEND_LIMIT_USD: '1000' });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'Assay',
      MetricName: 'DailySpendUsd',
      Dimensions: [{ Name: 'service', Value: 'assay-worker' }],
      Statistic: 'Maximum',
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      Threshold: 800,
    });
  });
});

describe('function permissions with options', () => {
  it('grants the worker alone bedrock:InvokeModel on the listed models and profiles; no daily alarm without a limit', () => {
    const { stack, template } = synthesize({
      ...DEFAULT_CONFIG,
      dailySpendLimitUsd: 0,
      bedrockModels: ['anthropic.claude-3-haiku-20240307-v1:0', 'us.amazon.nova-lite-v1:0'],
    });
    const bedrock = (name: Name) =>
      statementsOf(stack, template, name).filter((s) => actionsOf(s).some((a) => a.startsWith('bedrock:')));
    const [statement, ...others] = bedrock('worker');
    expect(others).toEqual([]);
    expect(actionsOf(statement!)).toEqual(['bedrock:InvokeModel']);
    const arns = JSON.stringify(statement!.Resource);
    expect(arns).toContain(':bedrock:"');
    expect(resourcesOf(statement!)).toHaveLength(3);
    expect(arns).toContain('::foundation-model/anthropic.claude-3-haiku-20240307-v1:0');
    expect(arns).toContain(':inference-profile/us.amazon.nova-lite-v1:0');
    expect(arns).toContain(':bedrock:*::foundation-model/amazon.nova-lite-v1:0');
    expect(arns).not.toMatch(/foundation-model\/\*|inference-profile\/\*/);
    for (const name of ['ingest', 'deadLetter', 'aggregate', 'batchPoller', 'watchdog'] as const)
      expect(bedrock(name), name).toEqual([]);
    template.resourcePropertiesCountIs('AWS::CloudWatch::Alarm', { MetricName: 'DailySpendUsd' }, 0);
    expect(nagFindings(stack)).toEqual([]);
  }, 120_000);

  it('fails the synth (cdk-nag) when a function role gets another "*" resource: the acknowledgement does not cover it', () => {
    const synth = () =>
      synthesize(DEFAULT_CONFIG, (s) =>
        s.functions.watchdog.addToRolePolicy(
          new iam.PolicyStatement({ actions: ['sqs:ListQueues'], resources: ['*'] }),
        ),
      );
    expect(synth).toThrow(/WatchdogRole\/DefaultPolicy[\s\S]*AwsSolutions-IAM5\[Resource::\*\]/);
  }, 120_000);
});

describe('deploy settings', () => {
  const nodeWith = (context: Record<string, unknown>) => new App({ context }).node;

  it('reads the limits and bedrockModels from -c strings or cdk.json lists', () => {
    expect(
      configFromContext(
        nodeWith({
          maxItemsPerUpload: '5000',
          dailySpendLimitUsd: '250.5',
          defaultRunBudgetUsd: '0',
          bedrockModels: 'anthropic.claude-3-haiku-20240307-v1:0, eu.anthropic.claude-3-haiku-20240307-v1:0',
        }),
      ),
    ).toMatchObject({
      maxItemsPerUpload: 5000,
      dailySpendLimitUsd: 250.5,
      defaultRunBudgetUsd: 0,
      bedrockModels: ['anthropic.claude-3-haiku-20240307-v1:0', 'eu.anthropic.claude-3-haiku-20240307-v1:0'],
    });
    expect(
      configFromContext(nodeWith({ bedrockModels: ['meta.llama3-8b-instruct-v1:0'] })).bedrockModels,
    ).toEqual(['meta.llama3-8b-instruct-v1:0']);
    expect(configFromContext(nodeWith({})).bedrockModels).toEqual([]);
    expect(
      configFromContext(nodeWith({ allowedModels: 'openai:gpt-4o-mini, ollama:llama3' })).allowedModels,
    ).toEqual(['openai:gpt-4o-mini', 'ollama:llama3']);
    expect(configFromContext(nodeWith({ allowedModels: ['*'] })).allowedModels).toEqual(['*']);
    expect(configFromContext(nodeWith({})).allowedModels).toEqual([]);
    expect(configFromContext(nodeWith({ maxRunBudgetUsd: '250' })).maxRunBudgetUsd).toBe(250);
  });

  it.each([
    [{ bedrockModels: '*' }, /bedrockModels/],
    [{ bedrockModels: 'arn:aws:bedrock:us-east-1::foundation-model/x' }, /bedrockModels.*ARNs/],
    [{ dailySpendLimitUsd: '-1' }, /dailySpendLimitUsd/],
    [{ maxOutputTokens: '1.5' }, /maxOutputTokens/],
    [{ maxRunBudgetUsd: '-5' }, /maxRunBudgetUsd/],
    [
      { defaultRunBudgetUsd: '500', maxRunBudgetUsd: '200' },
      /"defaultRunBudgetUsd" \(500\) is above "maxRunBudgetUsd" \(200\)/,
    ],
    [{ allowedModels: 'gpt-4o' }, /allowedModels.*vendor:model/],
    [{ allowedModels: '*,openai:gpt-4o' }, /"\*" alone/],
  ])('rejects %o, naming the key', (context, message) => {
    expect(() => configFromContext(nodeWith(context))).toThrow(ConfigError);
    expect(() => configFromContext(nodeWith(context))).toThrow(message);
  });

  it('writes the variables the functions read, and they read them back', () => {
    const env = { ...uploadLimitsEnv(DEFAULT_CONFIG), ...spendLimitEnv(DEFAULT_CONFIG) };
    // The allow-list is set only when listed: unset, ingest allows the models the price table prices.
    expect(Object.keys(env).sort()).toEqual(
      Object.values(DEPLOY_ENV)
        .filter((name) => name !== DEPLOY_ENV.stopCacheMs && name !== DEPLOY_ENV.allowedModels)
        .sort(),
    );
    expect(deployLimitsFromEnv(env)).toEqual({
      maxItems: 10_000_000,
      maxVariantsTimesRepeats: 50,
      maxOutputTokens: 4096,
      defaultBudgetUsd: 100,
      maxRunBudgetUsd: 1000,
    });
    const listed = uploadLimitsEnv({
      ...DEFAULT_CONFIG,
      allowedModels: ['openai:gpt-4o-mini', 'ollama:llama3'],
    });
    expect(deployLimitsFromEnv(listed).allowedModels).toEqual(['openai:gpt-4o-mini', 'ollama:llama3']);
    expect(
      deployLimitsFromEnv(uploadLimitsEnv({ ...DEFAULT_CONFIG, allowedModels: ['*'] })).allowedModels,
    ).toBe('any');
    expect(dailySpendLimitFromEnv(env)).toBe(1000);
    // 0 is no limit.
    expect(
      deployLimitsFromEnv(uploadLimitsEnv({ ...DEFAULT_CONFIG, maxItemsPerUpload: 0 })).maxItems,
    ).toBeUndefined();
    expect(() => deployLimitsFromEnv({ ASSAY_MAX_ITEMS_PER_UPLOAD: 'many' })).toThrow(
      /ASSAY_MAX_ITEMS_PER_UPLOAD/,
    );
  });

  it('tells an inference profile id from a model id', () => {
    expect(inferenceProfileModel('us.anthropic.claude-3-5-haiku-20241022-v1:0')).toBe(
      'anthropic.claude-3-5-haiku-20241022-v1:0',
    );
    expect(inferenceProfileModel('global.anthropic.claude-sonnet-4-20250514-v1:0')).toBe(
      'anthropic.claude-sonnet-4-20250514-v1:0',
    );
    expect(inferenceProfileModel('anthropic.claude-3-haiku-20240307-v1:0')).toBeUndefined();
  });
});
