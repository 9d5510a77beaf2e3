/**
 * Tenancy as the stack deploys it: with `teams` declared, the bucket policy denies every
 * principal but a team's writers putting or deleting the team's suites, datasets and prompt
 * folder; ingest learns the teams' names and the declared provider key names, and has no
 * access to the provider secret (the worker and the batch poller still read it).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, type CfnElement } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AssayConfig, ConfigError, configFromContext, DEFAULT_CONFIG } from '../../infra/config.js';
import { addNagChecks } from '../../infra/nag.js';
import { AssayStack } from '../../infra/stack.js';

const CDK_CONTEXT: Record<string, unknown> = JSON.parse(
  readFileSync(new URL('../../infra/cdk.json', import.meta.url), 'utf8'),
).context;
const ALPHA = 'arn:aws:iam::111122223333:role/alpha-writer';
const BETA = ['arn:aws:iam::111122223333:role/beta-writer', 'arn:aws:iam::111122223333:role/beta-ci-*'];
const TEAMS = { beta: BETA, alpha: [ALPHA] };

interface Statement {
  Sid?: string;
  Effect: string;
  Action: string | string[];
  Resource: unknown;
  Condition?: Record<string, Record<string, unknown>>;
}
type Resources = Record<string, { Type: string; Properties: Record<string, unknown> }>;

const outdirs: string[] = [];
afterAll(() => {
  for (const dir of outdirs) rmSync(dir, { recursive: true, force: true });
});

function synthesize(config: AssayConfig) {
  const outdir = mkdtempSync(join(tmpdir(), 'assay-tenancy-infra-'));
  outdirs.push(outdir);
  const app = new App({ outdir, context: { ...CDK_CONTEXT, 'aws:cdk:bundling-stacks': [] } });
  const stack = new AssayStack(app, 'AssayStack', { config });
  addNagChecks(app);
  return { stack, template: Template.fromStack(stack) };
}

const listOf = (value: unknown): unknown[] => (Array.isArray(value) ? value : [value]);

/** The statements of the Assay bucket's policy. */
function bucketStatements(stack: AssayStack, template: Template): Statement[] {
  const bucketId = stack.getLogicalId(stack.storage.bucket.node.defaultChild as CfnElement);
  const policy = Object.values(template.findResources('AWS::S3::BucketPolicy') as Resources).find(
    (p) => JSON.stringify(p.Properties.Bucket) === JSON.stringify({ Ref: bucketId }),
  );
  return (policy!.Properties.PolicyDocument as { Statement: Statement[] }).Statement;
}

/** An object resource of the bucket policy as its key pattern (`suites/alpha-*`). */
function keyPattern(resource: unknown): string {
  const parts = (resource as { 'Fn::Join': [string, unknown[]] })['Fn::Join'][1];
  return String(parts.at(-1)).replace(/^\//, '');
}

function statementsOfRole(stack: AssayStack, template: Template, name: keyof AssayStack['functions']) {
  const roleId = stack.getLogicalId(stack.functions[name].role!.node.defaultChild as CfnElement);
  return Object.values(template.findResources('AWS::IAM::Policy') as Resources)
    .filter((policy) =>
      (policy.Properties.Roles as unknown[]).some(
        (r) => JSON.stringify(r) === JSON.stringify({ Ref: roleId }),
      ),
    )
    .flatMap((policy) => (policy.Properties.PolicyDocument as { Statement: Statement[] }).Statement);
}

function envOf(stack: AssayStack, template: Template, name: keyof AssayStack['functions']) {
  const id = stack.getLogicalId(stack.functions[name].node.defaultChild as CfnElement);
  const props = (template.toJSON().Resources as Resources)[id]!.Properties;
  return (props.Environment as { Variables: Record<string, unknown> }).Variables;
}

describe('a stack with teams', () => {
  let stack: AssayStack;
  let template: Template;
  beforeAll(() => {
    ({ stack, template } = synthesize({
      ...DEFAULT_CONFIG,
      teams: TEAMS,
      providerKeys: ['ANTHROPIC_API_KEY', 'OPENAI_API_KEY'],
    }));
  }, 120_000);

  it("denies every principal but a team's writers putting or deleting its suites, datasets and prompts", () => {
    const denies = bucketStatements(stack, template).filter((s) => s.Sid?.startsWith('OnlyTeam'));
    expect(denies.map((s) => s.Sid)).toEqual(['OnlyTeamalphaWritesItsKeys', 'OnlyTeambetaWritesItsKeys']);
    const [alpha, beta] = denies as [Statement, Statement];
    for (const statement of denies) {
      expect(statement.Effect).toBe('Deny');
      expect(listOf(statement.Action).sort()).toEqual([
        's3:DeleteObject',
        's3:DeleteObjectVersion',
        's3:PutObject',
      ]);
      expect((statement as unknown as { Principal: unknown }).Principal).toEqual({ AWS: '*' });
    }
    expect(listOf(alpha.Resource).map(keyPattern).sort()).toEqual(
      [
        'suites/alpha.json',
        'suites/alpha-*',
        'datasets/alpha/*',
        'datasets/alpha-*',
        'prompts/alpha/*',
      ].sort(),
    );
    expect(alpha.Condition).toEqual({ ArnNotLike: { 'aws:PrincipalArn': [ALPHA] } });
    expect(listOf(beta.Resource).map(keyPattern)).toContain('prompts/beta/*');
    expect(beta.Condition).toEqual({ ArnNotLike: { 'aws:PrincipalArn': BETA } });
  });

  it("leaves the shipped prompts' keys and the keys of no team to the bucket's writers", () => {
    const patterns = bucketStatements(stack, template)
      .filter((s) => s.Sid?.startsWith('OnlyTeam'))
      .flatMap((s) => listOf(s.Resource).map(keyPattern));
    expect(patterns.some((p) => p.startsWith('prompts/judge') || p === 'prompts/*' || p === 'suites/*')).toBe(
      false,
    );
  });

  it('gives ingest the teams and the declared key names, and no access to the provider secret', () => {
    const env = envOf(stack, template, 'ingest');
    expect(env.ASSAY_TEAMS).toBe('alpha,beta');
    expect(env.ASSAY_PROVIDER_KEYS).toBe('ANTHROPIC_API_KEY,OPENAI_API_KEY');
    expect(env.PROVIDER_SECRET_ARN).toBeUndefined();
    const actions = statementsOfRole(stack, template, 'ingest').flatMap((s) => listOf(s.Action));
    expect(actions.filter((a) => String(a).startsWith('secretsmanager:'))).toEqual([]);
    // The worker calls the vendors: it still reads the secret.
    const secretRef = JSON.stringify({
      Ref: stack.getLogicalId(stack.providerSecret.node.defaultChild as CfnElement),
    });
    expect(
      statementsOfRole(stack, template, 'worker').some(
        (s) =>
          listOf(s.Action).includes('secretsmanager:GetSecretValue') &&
          JSON.stringify(s.Resource) === secretRef,
      ),
    ).toBe(true);
    expect(envOf(stack, template, 'worker').ASSAY_TEAMS).toBeUndefined();
  });

  it('passes cdk-nag', () => {
    const findings = new AwsSolutionsChecks().validateScope(stack).violations.map((v) => v.ruleName);
    expect(findings).toEqual([]);
  });
});

describe('a stack without teams', () => {
  it('adds no team statement, sets no ASSAY_TEAMS, declares the three keys of the template, and still gives ingest no secret', () => {
    const { stack, template } = synthesize(DEFAULT_CONFIG);
    expect(bucketStatements(stack, template).filter((s) => s.Sid?.startsWith('OnlyTeam'))).toEqual([]);
    const env = envOf(stack, template, 'ingest');
    expect(env.ASSAY_TEAMS).toBeUndefined();
    expect(env.ASSAY_PROVIDER_KEYS).toBe('ANTHROPIC_API_KEY,GEMINI_API_KEY,OPENAI_API_KEY');
    const actions = statementsOfRole(stack, template, 'ingest').flatMap((s) => listOf(s.Action));
    expect(actions.some((a) => String(a).startsWith('secretsmanager:'))).toBe(false);
  }, 120_000);
});

describe('teams and providerKeys in CDK context', () => {
  const contextOf = (context: Record<string, unknown>) => configFromContext(new App({ context }).node);

  it('reads a JSON object from -c or cdk.json, and key names as a list or separated by ","', () => {
    expect(contextOf({}).teams).toEqual({});
    expect(contextOf({}).providerKeys).toEqual(['ANTHROPIC_API_KEY', 'GEMINI_API_KEY', 'OPENAI_API_KEY']);
    expect(contextOf({ providerKeys: '' }).providerKeys).toEqual([]);
    expect(contextOf({ teams: JSON.stringify({ alpha: [ALPHA] }) }).teams).toEqual({ alpha: [ALPHA] });
    expect(contextOf({ teams: { alpha: [ALPHA, ALPHA] } }).teams).toEqual({ alpha: [ALPHA] });
    expect(contextOf({ providerKeys: 'OPENAI_API_KEY,GEMINI_API_KEY' }).providerKeys).toEqual([
      'GEMINI_API_KEY',
      'OPENAI_API_KEY',
    ]);
    expect(contextOf({ providerKeys: ['OPENAI_API_KEY'] }).providerKeys).toEqual(['OPENAI_API_KEY']);
  });

  it.each([
    [{ teams: '["alpha"]' }, /context "teams" must be a JSON object/],
    [{ teams: { 'alpha-1': [ALPHA] } }, /team "alpha-1" is not lowercase letters and digits/],
    [{ teams: { judge: [ALPHA] } }, /team "judge" is a folder of the shipped prompts/],
    [{ teams: { alpha: [] } }, /team alpha needs a non-empty list of IAM role or user ARNs/],
    [{ teams: { alpha: ['alpha-writer'] } }, /team alpha needs a non-empty list/],
    [{ providerKeys: 'sk-123' }, /context "providerKeys": "sk-123" is not an environment variable name/],
  ])('rejects %j, naming the key', (context, message) => {
    expect(() => contextOf(context)).toThrow(ConfigError);
    expect(() => contextOf(context)).toThrow(message);
  });
});
