import { CustomResource, Duration, type RemovalPolicy, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as secrets from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import { baseBundling, runnerFile } from './bundling';

/**
 * The signing key's generation template. It never changes: CloudFormation generates a new value whenever a
 * secret's `GenerateSecretString` changes, and a new key kills every approval link, MCP id and console session.
 */
export const SIGNING_KEY_GENERATION = {
  secretStringTemplate: '{}',
  generateStringKey: 'approvalSecret',
  excludePunctuation: true,
  passwordLength: 48,
} as const satisfies secrets.SecretStringGenerator;

export interface RunnerSigningKeyProps {
  /** The principals document the construct created: before this key existed it held `approvalSecret`. */
  readonly configSecret: secrets.ISecret;
  readonly removalPolicy: RemovalPolicy;
  readonly runtime: lambda.Runtime;
  readonly bundleTarget: string;
  readonly logRetention: logs.RetentionDays;
}

/**
 * The key that signs approval links, MCP session ids and console sessions, in a secret of its own, and the
 * custom resource that seeds it once (when it is created) with the `approvalSecret` the principals document
 * held before: a stack deployed before this key existed keeps its links. Functions that sign or verify depend on
 * the seeding, so none of them reads the key before it holds the old value.
 */
export class RunnerSigningKey extends Construct {
  readonly secret: secrets.Secret;
  readonly seeded: CustomResource;
  readonly seedFunction: NodejsFunction;

  constructor(scope: Construct, id: string, props: RunnerSigningKeyProps) {
    super(scope, id);
    this.secret = new secrets.Secret(this, 'Secret', {
      description: 'Tool runner signing key (approval links, MCP session ids, console sessions)',
      removalPolicy: props.removalPolicy,
      generateSecretString: { ...SIGNING_KEY_GENERATION },
    });
    const logGroup = new logs.LogGroup(this, 'SeedLogs', { retention: props.logRetention, removalPolicy: props.removalPolicy });
    const role = new iam.Role(this, 'SeedRole', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: 'toolrunner signing key seed',
    });
    role.addToPolicy(
      new iam.PolicyStatement({ actions: ['logs:CreateLogStream', 'logs:PutLogEvents'], resources: [logGroup.logGroupArn] }),
    );
    role.addToPolicy(new iam.PolicyStatement({ actions: ['secretsmanager:GetSecretValue'], resources: [props.configSecret.secretArn] }));
    role.addToPolicy(new iam.PolicyStatement({ actions: ['secretsmanager:PutSecretValue'], resources: [this.secret.secretArn] }));
    this.seedFunction = new NodejsFunction(this, 'SeedFunction', {
      entry: runnerFile('functions/handlers/seed-signing-key'),
      handler: 'handler',
      runtime: props.runtime,
      architecture: lambda.Architecture.ARM_64,
      memorySize: 128,
      timeout: Duration.seconds(30),
      tracing: lambda.Tracing.PASS_THROUGH,
      role,
      logGroup,
      loggingFormat: lambda.LoggingFormat.JSON,
      bundling: baseBundling(props.bundleTarget),
    });
    const ack = (scope: Construct, ackId: string, reason: string) => Validations.of(scope).acknowledge({ id: ackId, reason });
    ack(
      role,
      'AwsSolutions-IAM5[Resource::*]',
      'X-Ray (pass-through tracing, as every function of the runner) has no resource-level permissions: xray:PutTraceSegments and xray:PutTelemetryRecords need Resource "*".',
    );
    ack(
      this.seedFunction,
      'Serverless-LambdaDLQ',
      'Invoked synchronously by CloudFormation for a custom resource, which fails the deploy when it does not answer.',
    );
    ack(
      this.seedFunction,
      'Serverless-LambdaTracing',
      'It runs once, when a deploy creates the signing key; its log line says whether it copied a key.',
    );
    // Lambda-backed, answering CloudFormation itself: no provider framework (another function, state machine
    // and role) for one copy made once.
    this.seeded = new CustomResource(this, 'Seed', {
      serviceToken: this.seedFunction.functionArn,
      resourceType: 'Custom::ToolRunnerSigningKeySeed',
      properties: { ConfigSecretArn: props.configSecret.secretArn, SigningKeyArn: this.secret.secretArn },
    });
  }
}
