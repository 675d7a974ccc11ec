import { Validations, type App } from 'aws-cdk-lib';
import { AwsSolutionsChecks, ServerlessChecks, type NagPack } from 'cdk-nag';
import type { IConstruct } from 'constructs';

/** The cdk-nag packs every synthesis of the app runs: AWS Solutions, and the Serverless pack. */
export function nagPacks(scope?: IConstruct): NagPack[] {
  return [new AwsSolutionsChecks(scope, { verbose: true }), new ServerlessChecks(scope, { verbose: true })];
}

/** Any unacknowledged finding (error or warning) interrupts `cdk synth`. */
export function applyNag(app: App): void {
  Validations.of(app).addPlugins(...nagPacks(app));
}
