import { type App, Stack, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';

/**
 * Runs the cdk-nag AWS Solutions pack on every synth of `app`. cdk-nag 3 is a CDK policy
 * validation plugin: findings that are not acknowledged fail the synth (and `cdk deploy`).
 * Acknowledged findings and their reasons are also written into each resource's template
 * Metadata (`cdk_nag.rules_to_suppress`), so the deployed template carries the audit trail.
 */
export function addNagChecks(app: App): AwsSolutionsChecks {
  const checks = new AwsSolutionsChecks(app, { verbose: true, writeSuppressionsToCloudFormation: true });
  Validations.of(app).addPlugins(checks);
  return checks;
}

/**
 * Acknowledges one cdk-nag finding on `scope` and everything below it. `id` is the finding as
 * cdk-nag prints it, e.g. `AwsSolutions-SMG4` or `AwsSolutions-IAM5[Resource::*]`; the reason
 * is what a reviewer reads, so it must say why the finding is acceptable here.
 */
export function acknowledge(scope: IConstruct, id: string, reason: string): void {
  Validations.of(scope).acknowledge({ id, reason });
}

/**
 * The string cdk-nag's IAM5 rule reports for a policy resource (`Resource::<Bucket1234.Arn>/spill/*`):
 * the value resolved to CloudFormation, with `Ref`/`Fn::GetAtt` written as `<LogicalId>` /
 * `<LogicalId.Attr>` and `Fn::Join` flattened. Lets an acknowledgement name exactly one
 * wildcard instead of every wildcard on the role (cdk-nag 3 has no prefix matching).
 */
export function iam5ResourceFinding(scope: IConstruct, resource: string): string {
  return `AwsSolutions-IAM5[Resource::${flatten(Stack.of(scope).resolve(resource))}]`;
}

function flatten(node: unknown): string {
  if (node === undefined) return '';
  if (typeof node === 'string') return node.replace(/\$\{/g, '<').replace(/}/g, '>');
  if (typeof node === 'object' && node !== null) {
    const fn = node as Record<string, unknown>;
    if (Array.isArray(fn['Fn::Join'])) {
      const [delimiter, items] = fn['Fn::Join'] as [string, unknown[]];
      return items.map(flatten).join(delimiter);
    }
    if ('Fn::Sub' in fn) return flatten(fn['Fn::Sub']);
    if (Array.isArray(fn['Fn::GetAtt'])) {
      const [resource, attribute] = fn['Fn::GetAtt'] as [unknown, unknown];
      return `<${flatten(resource)}.${flatten(attribute)}>`;
    }
    if ('Ref' in fn) return `<${flatten(fn.Ref)}>`;
  }
  return JSON.stringify(node);
}
