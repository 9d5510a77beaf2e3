import { App } from 'aws-cdk-lib';
import { deploymentNeeds, renderDeploymentNeeds } from './capacity.js';
import { configFromContext } from './config.js';
import { addNagChecks } from './nag.js';
import { AssayStack } from './stack.js';

// Run by the CDK CLI from infra/ (see cdk.json): `npx cdk synth`, `npx cdk deploy`.
const app = new App();
const config = configFromContext(app.node);
// Every synth says what the deployment needs from the account, before anything is deployed.
process.stderr.write(renderDeploymentNeeds(deploymentNeeds(config)));
new AssayStack(app, 'AssayStack', {
  config,
  // Unset without AWS credentials: the template is then environment-agnostic.
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
});
addNagChecks(app);
