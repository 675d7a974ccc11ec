import { CfnResource, Stack } from 'aws-cdk-lib';
import type { CfnFunction } from 'aws-cdk-lib/aws-lambda';
import { CfnSecret } from 'aws-cdk-lib/aws-secretsmanager';

/** Lambda's limit on a function's environment: the keys and values of every variable together. */
export const LAMBDA_ENVIRONMENT_LIMIT_BYTES = 4096;

/**
 * The longest value a pseudo parameter takes: the longest partition (`aws-us-gov`), region (14 characters, as
 * `ap-southeast-5`, with room for 2 more) and URL suffix (`amazonaws.com.cn`) AWS has.
 */
const REGION = 16;
const PARTITION = 10;
const URL_SUFFIX = 16;
const PSEUDO_MAX: Record<string, number> = {
  'AWS::AccountId': 12,
  'AWS::Region': REGION,
  'AWS::Partition': PARTITION,
  'AWS::URLSuffix': URL_SUFFIX,
  'AWS::StackName': 128,
  'AWS::StackId': 256,
};

/**
 * The longest `Ref` of a resource type, from each service's naming limits (the ARN's fixed parts with the
 * longest partition, region and account added, for types whose `Ref` is an ARN).
 */
const ARN_FIXED = 'arn:'.length + PARTITION + 1 + REGION + 1 + 12 + 1;
const REF_MAX: Record<string, number> = {
  'AWS::DynamoDB::Table': 255,
  'AWS::S3::Bucket': 63,
  'AWS::Lambda::Function': 64,
  // A version's Ref is its qualified ARN: the function's and `:<version number>` (at most 10 digits).
  'AWS::Lambda::Version': ARN_FIXED + 'lambda:function:'.length + 64 + 1 + 10,
  'AWS::SNS::Topic': ARN_FIXED + 'sns:'.length + 256,
  'AWS::SecretsManager::Secret': ARN_FIXED + 'secretsmanager:secret:'.length + 512 + '-XXXXXX'.length,
  'AWS::StepFunctions::StateMachine': ARN_FIXED + 'states:stateMachine:'.length + 80,
  'AWS::ApiGatewayV2::Api': 10,
  'AWS::Cognito::UserPool': 55,
  // Cognito's API reference allows an app client id up to 128 characters, but the ids it generates are 26
  // ([a-z0-9]): observed, not documented. Counted at 128, the client per role that infra/oauth.ts creates would
  // push the API function past the limit before any variable of the user's.
  'AWS::Cognito::UserPoolClient': 26,
  'AWS::SQS::Queue': 'https://sqs.'.length + REGION + '.'.length + URL_SUFFIX + '/'.length + 12 + '/'.length + 80,
};
/** The longest `Fn::GetAtt` of a resource type's attribute. */
const ATT_MAX: Record<string, number> = {
  'AWS::DynamoDB::Table.Arn': ARN_FIXED + 'dynamodb:table/'.length + 255,
  'AWS::DynamoDB::Table.StreamArn': ARN_FIXED + 'dynamodb:table/'.length + 255 + '/stream/'.length + 32,
  'AWS::S3::Bucket.Arn': 'arn:'.length + PARTITION + ':s3:::'.length + 63,
  'AWS::S3::Bucket.DomainName': 63 + '.s3.'.length + URL_SUFFIX,
  'AWS::S3::Bucket.RegionalDomainName': 63 + '.s3.'.length + REGION + 1 + URL_SUFFIX,
  'AWS::Lambda::Function.Arn': ARN_FIXED + 'lambda:function:'.length + 64,
  'AWS::SNS::Topic.TopicArn': ARN_FIXED + 'sns:'.length + 256,
  'AWS::SNS::Topic.TopicName': 256,
  'AWS::StepFunctions::StateMachine.Arn': ARN_FIXED + 'states:stateMachine:'.length + 80,
  'AWS::StepFunctions::StateMachine.Name': 80,
  'AWS::ApiGatewayV2::Api.ApiEndpoint': 'https://'.length + 10 + '.execute-api.'.length + REGION + 1 + URL_SUFFIX,
  'AWS::ApiGatewayV2::Api.ApiId': 10,
  'AWS::Cognito::UserPool.ProviderURL': 'https://cognito-idp.'.length + REGION + 1 + URL_SUFFIX + 1 + 55,
  'AWS::Cognito::UserPool.ProviderName': 'cognito-idp.'.length + REGION + 1 + URL_SUFFIX + 1 + 55,
  'AWS::Cognito::UserPool.Arn': ARN_FIXED + 'cognito-idp:userpool/'.length + 55,
  'AWS::Cognito::UserPool.UserPoolId': 55,
  'AWS::SecretsManager::Secret.Id': ARN_FIXED + 'secretsmanager:secret:'.length + 512 + '-XXXXXX'.length,
  'AWS::SQS::Queue.Arn': ARN_FIXED + 'sqs:'.length + 80,
  'AWS::SQS::Queue.QueueName': 80,
};

type Bound = { bytes: number; unbounded: string[] };

/**
 * A secret CloudFormation names itself is named `<logical id>-<12 characters>`
 * (https://docs.aws.amazon.com/secretsmanager/latest/userguide/cfn-example_secret.html): its ARN's longest,
 * far below a declared name's 512.
 */
const generatedSecretArn = (logicalId: string) =>
  ARN_FIXED + 'secretsmanager:secret:'.length + logicalId.length + '-XXXXXXXXXXXX'.length + '-XXXXXX'.length;

/**
 * The longest an environment value can be once deployed: literal text as it is, each intrinsic at the longest
 * value its resource type allows; what cannot be bounded (an imported value, a parameter) at the whole limit.
 */
function longest(value: unknown, typeOf: (logicalId: string) => string | undefined, exact = new Map<string, number>()): Bound {
  if (typeof value === 'string') return { bytes: Buffer.byteLength(value), unbounded: [] };
  if (typeof value === 'number' || typeof value === 'boolean') return { bytes: String(value).length, unbounded: [] };
  const unbounded = (what: string): Bound => ({ bytes: LAMBDA_ENVIRONMENT_LIMIT_BYTES, unbounded: [what] });
  if (!value || typeof value !== 'object') return unbounded(JSON.stringify(value));
  const entries = Object.entries(value);
  if (entries.length !== 1) return unbounded(JSON.stringify(value));
  const [fn, arg] = entries[0] as [string, unknown];
  if (fn === 'Ref' && typeof arg === 'string') {
    const max = PSEUDO_MAX[arg] ?? exact.get(arg) ?? REF_MAX[typeOf(arg) ?? ''];
    return max === undefined ? unbounded(`Ref ${arg}`) : { bytes: max, unbounded: [] };
  }
  if (fn === 'Fn::GetAtt' && Array.isArray(arg)) {
    const max = (arg[1] === 'Id' ? exact.get(String(arg[0])) : undefined) ?? ATT_MAX[`${typeOf(String(arg[0])) ?? ''}.${arg[1]}`];
    return max === undefined ? unbounded(`Fn::GetAtt ${arg.join('.')}`) : { bytes: max, unbounded: [] };
  }
  if (fn === 'Fn::Join' && Array.isArray(arg) && Array.isArray(arg[1])) {
    const parts = (arg[1] as unknown[]).map((p) => longest(p, typeOf, exact));
    const separators = Buffer.byteLength(String(arg[0])) * Math.max(0, parts.length - 1);
    return { bytes: parts.reduce((a, p) => a + p.bytes, separators), unbounded: parts.flatMap((p) => p.unbounded) };
  }
  // A piece of a split value is at most the value it was split from.
  if (fn === 'Fn::Select' && Array.isArray(arg)) {
    const from = arg[1] as Record<string, unknown>;
    const split = from && typeof from === 'object' ? (from['Fn::Split'] as unknown[] | undefined) : undefined;
    return split ? longest(split[1], typeOf, exact) : unbounded(JSON.stringify(value));
  }
  return unbounded(fn);
}

/**
 * The synth's refusal of a function whose environment could pass Lambda's 4 KB once its tokens resolve: each
 * unresolved token counted at the longest value its resource type allows, the user's variables included.
 */
export function environmentSizeErrors(name: string, fn: CfnFunction): string[] {
  const stack = Stack.of(fn);
  const types = new Map<string, string>();
  const exact = new Map<string, number>();
  for (const child of stack.node.findAll())
    if (child instanceof CfnResource) {
      const id = stack.resolve(child.logicalId) as string;
      types.set(id, child.cfnResourceType);
      if (child instanceof CfnSecret && stack.resolve(child.name) === undefined) exact.set(id, generatedSecretArn(id));
    }
  const environment = stack.resolve(fn.environment) as { variables?: Record<string, unknown> } | undefined;
  const variables = Object.entries(environment?.variables ?? {});
  const bounds = variables.map(([key, value]) => ({ key, ...longest(value, (id) => types.get(id), exact) }));
  const total = bounds.reduce((sum, b) => sum + Buffer.byteLength(b.key) + b.bytes, 0);
  if (total <= LAMBDA_ENVIRONMENT_LIMIT_BYTES) return [];
  const largest = [...bounds]
    .sort((a, b) => b.bytes - a.bytes)
    .slice(0, 3)
    .map((b) => `${b.key} ${b.bytes}${b.unbounded.length ? ` (unbounded: ${b.unbounded.join(', ')})` : ''}`);
  return [
    `ToolRunner: the ${name} function's environment could reach ${total} bytes once deployed, over Lambda's ${LAMBDA_ENVIRONMENT_LIMIT_BYTES} (each token counted at the longest value its resource type allows; largest: ${largest.join(', ')}): shorten tools.environment`,
  ];
}
