import { App } from 'aws-cdk-lib';
import { configFromContext } from './config.js';
import { addNagChecks } from './nag.js';
import { AssayStack } from './stack.js';

// Run by the CDK CLI from infra/ (see cdk.json): `npx cdk synth`, `npx cdk deploy`.
const app = new App();
new AssayStack(app, 'AssayStack', {
  config: configFromContext(app.node),
  // Unset without AWS credentials: the template is then environment-agnostic.
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
});
addNagChecks(app);
