import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import type { CreateTableCommandInput } from '@aws-sdk/client-dynamodb';
import { z } from 'zod';
import type { CfnResource, StackAssembly } from './assembly';
import type { SubscriptionModel } from './email-outbox';
import type { LocalSecret, SecretGenerator } from './local-services';

/** Where the local stack puts what the template declares. */
export interface LocalPlacement {
  /** Prefixes every table name, so stacks sharing one DynamoDB Local never see each other's items. */
  tablePrefix: string;
  /** The API's local base URL: what the HTTP API's `ApiEndpoint` resolves to. */
  apiUrl: string;
  /** Replaces SANDBOX_URL, the demo stack's one deploy-time value, in every function that has it. */
  sandboxUrl?: string;
}

export interface FunctionModel {
  logicalId: string;
  name: string;
  arn: string;
  roleArn: string;
  /** The template's variables, every intrinsic resolved to the local resources. */
  environment: Record<string, string>;
  memoryMb: number;
  timeoutSeconds: number;
  /** The bundle directory of the function's code asset. */
  codeDir: string;
  /** `index.handler`: the module and its export. */
  handler: string;
  logGroupName: string;
  /** `LoggingConfig`: Lambda's own lines as text (START/END/REPORT) or JSON records, and from which level. */
  logFormat: 'Text' | 'JSON';
  systemLogLevel: 'DEBUG' | 'INFO' | 'WARN';
  /** `Runtime`, e.g. `nodejs24.x`: its Node.js major is what the function's process runs on. */
  runtime: string;
  /** `ReservedConcurrentExecutions`: instances kept for this function alone, and its ceiling. */
  reservedConcurrency?: number;
}

/** An `AWS::Lambda::Version`: a qualified ARN that invokes its function as that version. */
export interface VersionModel {
  logicalId: string;
  /** `arn:aws:lambda:<region>:<account>:function:<name>:<version>`. */
  arn: string;
  functionArn: string;
  version: string;
}

export interface TableModel {
  logicalId: string;
  name: string;
  arn: string;
  create: CreateTableCommandInput;
  ttlAttribute?: string;
}

export interface CustomResourceModel {
  logicalId: string;
  /** `AWS::CloudFormation::CustomResource` or `Custom::…`. */
  type: string;
  /** The `ServiceToken`: the ARN of the function that answers. */
  serviceToken: string;
  /** The resource's properties, every intrinsic resolved (`ServiceToken` included, as CloudFormation sends them). */
  properties: Record<string, unknown>;
}

export interface MachineModel {
  logicalId: string;
  name: string;
  arn: string;
  type: 'STANDARD' | 'EXPRESS';
  /** The ASL with the template's definition substitutions applied. */
  definition: string;
  roleArn: string;
}

export interface RouteModel {
  routeKey: string;
  functionArn: string;
  /** The integration's timeout: `TimeoutInMillis`, else the HTTP API's 30 s. */
  timeoutMs: number;
}

export interface ScheduleModel {
  logicalId: string;
  everyMs: number;
  targetArn: string;
  roleArn: string;
  input?: string;
}

export interface PolicyDocument {
  Version?: string;
  Statement: unknown[] | unknown;
}

export interface RoleModel {
  arn: string;
  name: string;
  /** Inline policies, AWS::IAM::Policy resources attached to it, and managed policies defined in the template. */
  policies: { name: string; document: PolicyDocument }[];
  /** Managed policies the template only names (AWS managed ones): not evaluated locally. */
  unknownManagedPolicies: string[];
}

/** The template bound to local resources: everything the local stack builds, with every name and ARN resolved. */
export interface StackModel {
  stackName: string;
  region: string;
  account: string;
  api?: { id: string; url: string };
  functions: FunctionModel[];
  /** Published versions of the functions: what a caller given a qualified ARN invokes. */
  versions: VersionModel[];
  tables: TableModel[];
  machines: MachineModel[];
  routes: RouteModel[];
  /** Resource policies of functions (AWS::Lambda::Permission): who may invoke which function. */
  invokePermissions: { functionArn: string; principal: string; sourceArn?: string }[];
  schedules: ScheduleModel[];
  roles: Map<string, RoleModel>;
  /** Resource policies by resource ARN (SNS topic policies, secret policies). */
  resourcePolicies: Map<string, PolicyDocument>;
  /** Each secret, and the `GenerateSecretString` CloudFormation fills it with when it creates it. */
  secrets: LocalSecret[];
  /** Custom resources backed by a function of the template: what CloudFormation asks that function to create. */
  customResources: CustomResourceModel[];
  /** Each topic and the key it is encrypted with (`KmsMasterKeyId` resolved: a key ARN, an alias or its ARN). */
  topics: { arn: string; name: string; kmsMasterKeyId?: string }[];
  /** The template's `AWS::SNS::Subscription`s (email ones deliver to the data directory's outbox). */
  subscriptions: SubscriptionModel[];
  /** S3 buckets (the blob store), served by s3rver. */
  buckets: { logicalId: string; name: string }[];
}

/** The region and account a template that left them to deploy time gets here. */
export const LOCAL_ENVIRONMENT = { region: 'us-east-1', account: '000000000000' } as const;

const hash = (...parts: string[]) => createHash('sha256').update(parts.join('/')).digest('hex');

interface Physical {
  ref: string;
  attrs: Record<string, string>;
}

/**
 * Physical names as CloudFormation would give them (a declared name wins; otherwise stack name, logical id and
 * a suffix), and the `Ref` and `Fn::GetAtt` values of each resource type template mode uses.
 */
function physicalOf(
  logicalId: string,
  resource: CfnResource,
  ctx: { stackName: string; region: string; account: string; placement: LocalPlacement; literal(value: unknown): string | undefined },
): Physical {
  const { region, account, stackName } = ctx;
  const props = resource.Properties ?? {};
  const declared = (key: string) => ctx.literal(props[key]);
  const generated = (max: number) =>
    `${`${stackName}-${logicalId}`.slice(0, max - 13)}-${hash(stackName, logicalId).slice(0, 12).toUpperCase()}`;
  switch (resource.Type) {
    case 'AWS::DynamoDB::Table': {
      const name = `${ctx.placement.tablePrefix}-${declared('TableName') ?? logicalId}`;
      return { ref: name, attrs: { Arn: `arn:aws:dynamodb:${region}:${account}:table/${name}` } };
    }
    case 'AWS::S3::Bucket': {
      // S3 names are lowercase, at most 63 characters, and global: the table prefix keeps local ones apart.
      const name = (declared('BucketName') ?? `${ctx.placement.tablePrefix}-${logicalId}-${hash(stackName, logicalId).slice(0, 8)}`)
        .toLowerCase()
        .replace(/[^a-z0-9-]/g, '-')
        .slice(0, 63)
        .replace(/-+$/, '');
      return { ref: name, attrs: { Arn: `arn:aws:s3:::${name}`, DomainName: `${name}.s3.amazonaws.com` } };
    }
    case 'AWS::Lambda::Function': {
      const name = declared('FunctionName') ?? generated(64);
      return { ref: name, attrs: { Arn: `arn:aws:lambda:${region}:${account}:function:${name}` } };
    }
    case 'AWS::IAM::Role': {
      const name = declared('RoleName') ?? generated(64);
      return { ref: name, attrs: { Arn: `arn:aws:iam::${account}:role/${name}`, RoleId: `AROA${hash(name).slice(0, 17).toUpperCase()}` } };
    }
    case 'AWS::IAM::ManagedPolicy': {
      const name = declared('ManagedPolicyName') ?? generated(128);
      const arn = `arn:aws:iam::${account}:policy/${name}`;
      return { ref: arn, attrs: { PolicyArn: arn } };
    }
    case 'AWS::StepFunctions::StateMachine': {
      const name = declared('StateMachineName') ?? `${logicalId}-${hash(stackName, logicalId).slice(0, 12)}`;
      const arn = `arn:aws:states:${region}:${account}:stateMachine:${name}`;
      return { ref: arn, attrs: { Arn: arn, Name: name } };
    }
    case 'AWS::SecretsManager::Secret': {
      const name = declared('Name') ?? `${logicalId}-${hash(stackName, logicalId).slice(0, 12)}`;
      const arn = `arn:aws:secretsmanager:${region}:${account}:secret:${name}-${hash(name).slice(0, 6)}`;
      return { ref: arn, attrs: { Id: arn } };
    }
    case 'AWS::SNS::Topic': {
      const name = declared('TopicName') ?? generated(256);
      const arn = `arn:aws:sns:${region}:${account}:${name}`;
      return { ref: arn, attrs: { TopicArn: arn, TopicName: name } };
    }
    case 'AWS::KMS::Key': {
      const id = [8, 4, 4, 4, 12].map((n, i) => hash(stackName, logicalId, String(i)).slice(0, n)).join('-');
      return { ref: id, attrs: { Arn: `arn:aws:kms:${region}:${account}:key/${id}`, KeyId: id } };
    }
    case 'AWS::CloudWatch::Alarm':
    case 'AWS::CloudWatch::CompositeAlarm': {
      const name = declared('AlarmName') ?? generated(255);
      return { ref: name, attrs: { Arn: `arn:aws:cloudwatch:${region}:${account}:alarm:${name}` } };
    }
    case 'AWS::Logs::LogGroup': {
      const name = declared('LogGroupName') ?? generated(512);
      return { ref: name, attrs: { Arn: `arn:aws:logs:${region}:${account}:log-group:${name}:*` } };
    }
    case 'AWS::ApiGatewayV2::Api': {
      const id = hash(stackName, logicalId).slice(0, 10);
      return { ref: id, attrs: { ApiId: id, ApiEndpoint: ctx.placement.apiUrl } };
    }
    case 'AWS::Scheduler::Schedule': {
      const name = declared('Name') ?? generated(64);
      return { ref: name, attrs: { Arn: `arn:aws:scheduler:${region}:${account}:schedule/default/${name}` } };
    }
    default:
      return { ref: hash(stackName, logicalId).slice(0, 10), attrs: {} };
  }
}

/**
 * A version's number here: from its logical id (CDK names each version of a function's code anew), so the
 * versions of two assemblies of one stack never share a number, and each number stays the same across starts.
 */
function versionNumber(stackName: string, logicalId: string): string {
  return String((Number.parseInt(hash(stackName, logicalId).slice(0, 8), 16) % 999_999_999) + 1);
}

const PSEUDO = (stackName: string, region: string, account: string): Record<string, string> => ({
  'AWS::Region': region,
  'AWS::AccountId': account,
  'AWS::Partition': 'aws',
  'AWS::URLSuffix': 'amazonaws.com',
  'AWS::StackName': stackName,
  'AWS::StackId': `arn:aws:cloudformation:${region}:${account}:stack/${stackName}/${hash(stackName).slice(0, 8)}`,
});

/** The stack's `AWS::StackId`, as the template's intrinsics resolve it. */
export function stackIdOf(model: Pick<StackModel, 'stackName' | 'region' | 'account'>): string {
  return PSEUDO(model.stackName, model.region, model.account)['AWS::StackId'];
}

/** Resolves CloudFormation intrinsics (Ref, Fn::GetAtt, Fn::Join, Fn::Sub, Fn::Select, Fn::Split) against local resources. */
export class Intrinsics {
  private readonly physical = new Map<string, Physical>();
  private readonly pseudo: Record<string, string>;

  constructor(
    private readonly resources: Record<string, CfnResource>,
    ctx: { stackName: string; region: string; account: string; placement: LocalPlacement },
  ) {
    this.pseudo = PSEUDO(ctx.stackName, ctx.region, ctx.account);
    const literal = (value: unknown) => (typeof value === 'string' ? value : undefined);
    for (const [id, resource] of Object.entries(resources)) this.physical.set(id, physicalOf(id, resource, { ...ctx, literal }));
    // A version's ARN is its function's (resolved now that every function has its name) and its number.
    for (const [id, resource] of Object.entries(resources))
      if (resource.Type === 'AWS::Lambda::Version') {
        const fn = this.string(resource.Properties?.FunctionName, `${id}.FunctionName`);
        const functionArn = fn.startsWith('arn:') ? fn : `arn:aws:lambda:${ctx.region}:${ctx.account}:function:${fn}`;
        const version = versionNumber(ctx.stackName, id);
        this.physical.set(id, { ref: `${functionArn}:${version}`, attrs: { FunctionArn: `${functionArn}:${version}`, Version: version } });
      }
  }

  /** The value with every intrinsic resolved; `where` names it in errors. */
  resolve(value: unknown, where: string): unknown {
    if (Array.isArray(value)) return value.map((v, i) => this.resolve(v, `${where}[${i}]`));
    if (!value || typeof value !== 'object') return value;
    const entries = Object.entries(value);
    if (entries.length === 1) {
      const [fn, arg] = entries[0];
      switch (fn) {
        case 'Ref':
          return this.ref(String(arg), where);
        case 'Fn::GetAtt': {
          const [id, attr] = Array.isArray(arg) ? arg.map(String) : String(arg).split(/\.(.*)/s);
          return this.getAtt(id, attr, where);
        }
        case 'Fn::Join': {
          const [separator, list] = arg as [string, unknown];
          return (this.resolve(list, where) as unknown[]).map((part) => this.text(part, where)).join(separator);
        }
        case 'Fn::Select': {
          const [index, list] = arg as [unknown, unknown];
          return (this.resolve(list, where) as unknown[])[Number(this.resolve(index, where))];
        }
        case 'Fn::Split': {
          const [separator, text] = arg as [string, unknown];
          return this.text(this.resolve(text, where), where).split(separator);
        }
        case 'Fn::Sub':
          return this.sub(arg, where);
        default:
          if (fn.startsWith('Fn::') || fn === 'Condition') throw new Error(`template mode cannot resolve ${fn} at ${where}`);
      }
    }
    return Object.fromEntries(entries.map(([k, v]) => [k, this.resolve(v, `${where}.${k}`)]));
  }

  /** A resolved value that must be a string. */
  string(value: unknown, where: string): string {
    return this.text(this.resolve(value, where), where);
  }

  private text(value: unknown, where: string): string {
    if (typeof value === 'string') return value;
    if (typeof value === 'number' || typeof value === 'boolean') return String(value);
    throw new Error(`template mode expected a string at ${where}, got ${JSON.stringify(value)}`);
  }

  private ref(name: string, where: string): string {
    if (name in this.pseudo) return this.pseudo[name];
    const p = this.physical.get(name);
    if (!p) throw new Error(`template mode cannot resolve Ref ${name} at ${where}`);
    return p.ref;
  }

  private getAtt(id: string, attr: string, where: string): string {
    const value = this.physical.get(id)?.attrs[attr];
    if (value === undefined)
      throw new Error(
        `template mode cannot resolve Fn::GetAtt ${id}.${attr} at ${where} (${this.resources[id]?.Type ?? 'no such resource'})`,
      );
    return value;
  }

  private sub(arg: unknown, where: string): string {
    const [text, vars] = typeof arg === 'string' ? [arg, {}] : (arg as [string, Record<string, unknown>]);
    const values = Object.fromEntries(Object.entries(vars).map(([k, v]) => [k, this.string(v, where)]));
    return text.replace(/\$\{(!?)([^}]+)\}/g, (_, bang: string, name: string) => {
      if (bang) return `\${${name}}`;
      if (name in values) return values[name];
      const [id, attr] = name.split(/\.(.*)/s);
      return attr ? this.getAtt(id, attr, where) : this.ref(id, where);
    });
  }
}

const KeySchema = z.array(z.object({ AttributeName: z.string(), KeyType: z.enum(['HASH', 'RANGE']) }));
const Throughput = z.object({ ReadCapacityUnits: z.coerce.number(), WriteCapacityUnits: z.coerce.number() });
const Index = z.object({
  IndexName: z.string(),
  KeySchema,
  Projection: z.object({
    ProjectionType: z.enum(['ALL', 'KEYS_ONLY', 'INCLUDE']).optional(),
    NonKeyAttributes: z.array(z.string()).optional(),
  }),
  ProvisionedThroughput: Throughput.optional(),
});
/** The AWS::DynamoDB::Table properties DynamoDB Local can honour (encryption and recovery have no local meaning). */
const TableProperties = z.object({
  TableName: z.string().optional(),
  BillingMode: z.enum(['PAY_PER_REQUEST', 'PROVISIONED']).default('PROVISIONED'),
  ProvisionedThroughput: Throughput.optional(),
  AttributeDefinitions: z.array(z.object({ AttributeName: z.string(), AttributeType: z.enum(['S', 'N', 'B']) })),
  KeySchema,
  GlobalSecondaryIndexes: z.array(Index).optional(),
  LocalSecondaryIndexes: z.array(Index.omit({ ProvisionedThroughput: true })).optional(),
  TimeToLiveSpecification: z.object({ AttributeName: z.string(), Enabled: z.boolean() }).optional(),
});
const ScheduleProperties = z.object({
  ScheduleExpression: z.string(),
  State: z.enum(['ENABLED', 'DISABLED']).default('ENABLED'),
  Target: z.object({ Arn: z.string(), RoleArn: z.string(), Input: z.string().optional() }),
});

/**
 * What Lambda's Invoke runs for a `FunctionName` (a name, a partial or a full ARN, each with or without a
 * qualifier): the ARN IAM checks (qualified when the caller qualified it, as on AWS) and the function that
 * runs. Undefined for what Lambda answers ResourceNotFound to: no such function, or no such version.
 */
export function invokeTarget(
  model: Pick<StackModel, 'functions' | 'versions'>,
  functionName: string,
): { arn: string; functionArn: string; version: string } | undefined {
  const fn = model.functions.find((f) => f.name === functionName || f.arn === functionName);
  if (fn) return { arn: fn.arn, functionArn: fn.arn, version: '$LATEST' };
  const qualified = /^(.*):([^:]+)$/.exec(functionName);
  if (!qualified) return undefined;
  const [, unqualified, qualifier] = qualified;
  const base = model.functions.find((f) => f.name === unqualified || f.arn === unqualified);
  if (!base) return undefined;
  if (qualifier === '$LATEST') return { arn: `${base.arn}:$LATEST`, functionArn: base.arn, version: '$LATEST' };
  const version = model.versions.find((v) => v.functionArn === base.arn && v.version === qualifier);
  return version && { arn: version.arn, functionArn: base.arn, version: version.version };
}

/** `rate(1 minute)` → 60000; other expressions (cron, at) are not run locally. */
function rateMs(expression: string): number | undefined {
  const m = /^rate\((\d+)\s+(minute|minutes|hour|hours|day|days)\)$/.exec(expression.trim());
  if (!m) return undefined;
  const unit = m[2].startsWith('minute') ? 60_000 : m[2].startsWith('hour') ? 3_600_000 : 86_400_000;
  return Number(m[1]) * unit;
}

/**
 * Binds the stack's template to local resources: physical names, ARNs and every property template mode runs
 * (functions, tables, state machines, routes, permissions, roles and their policies, schedules).
 */
export function bindStack(assembly: StackAssembly, placement: LocalPlacement): StackModel {
  const stackName = assembly.stackName;
  const region = assembly.region ?? LOCAL_ENVIRONMENT.region;
  const account = assembly.account ?? LOCAL_ENVIRONMENT.account;
  const resources = assembly.template.Resources;
  const cfn = new Intrinsics(resources, { stackName, region, account, placement });
  const of = (type: string) => Object.entries(resources).filter(([, r]) => r.Type === type);
  const props = (r: CfnResource) => r.Properties ?? {};
  const str = (value: unknown, where: string) => cfn.string(value, where);
  const attr = (id: string, name: string) => cfn.string({ 'Fn::GetAtt': [id, name] }, id);
  const ref = (id: string) => cfn.string({ Ref: id }, id);

  const asset = (key: unknown, where: string) => {
    const path = assembly.assetPath(str(key, where));
    if (!path || !existsSync(path)) throw new Error(`${where}: no asset in ${assembly.dir} for ${str(key, where)}`);
    return path;
  };

  const functions: FunctionModel[] = of('AWS::Lambda::Function').map(([id, r]) => {
    const p = props(r);
    const code = (p.Code ?? {}) as Record<string, unknown>;
    if (!code.S3Key)
      throw new Error(`${id}: template mode runs functions from file assets (Code.S3Key), not ${Object.keys(code).join(', ')}`);
    const runtime = String(p.Runtime ?? '');
    if (!runtime.startsWith('nodejs')) throw new Error(`${id}: template mode runs Node.js functions only (Runtime ${runtime})`);
    const variables = ((p.Environment as { Variables?: unknown } | undefined)?.Variables ?? {}) as Record<string, unknown>;
    const environment = Object.fromEntries(Object.entries(variables).map(([k, v]) => [k, str(v, `${id}.Environment.Variables.${k}`)]));
    if (placement.sandboxUrl && 'SANDBOX_URL' in environment) environment.SANDBOX_URL = placement.sandboxUrl;
    const logging = (p.LoggingConfig ?? {}) as { LogGroup?: unknown; LogFormat?: unknown; SystemLogLevel?: unknown };
    const logGroup = logging.LogGroup;
    const systemLogLevel = String(logging.SystemLogLevel ?? 'INFO');
    const name = ref(id);
    return {
      logicalId: id,
      name,
      arn: attr(id, 'Arn'),
      roleArn: str(p.Role, `${id}.Role`),
      runtime,
      environment,
      memoryMb: Number(p.MemorySize ?? 128),
      timeoutSeconds: Number(p.Timeout ?? 3),
      codeDir: asset(code.S3Key, `${id}.Code`),
      handler: String(p.Handler ?? 'index.handler'),
      logGroupName: logGroup ? str(logGroup, `${id}.LoggingConfig.LogGroup`) : `/aws/lambda/${name}`,
      logFormat: logging.LogFormat === 'JSON' ? 'JSON' : 'Text',
      systemLogLevel: systemLogLevel === 'DEBUG' || systemLogLevel === 'WARN' ? systemLogLevel : 'INFO',
      ...(p.ReservedConcurrentExecutions === undefined ? {} : { reservedConcurrency: Number(p.ReservedConcurrentExecutions) }),
    };
  });

  const versions: VersionModel[] = of('AWS::Lambda::Version').map(([id]) => {
    const arn = ref(id);
    const functionArn = arn.replace(/:[^:]+$/, '');
    if (!functions.some((f) => f.arn === functionArn)) throw new Error(`${id}: a version of ${functionArn}, which is not in the template`);
    return { logicalId: id, arn, functionArn, version: attr(id, 'Version') };
  });

  const tables: TableModel[] = of('AWS::DynamoDB::Table').map(([id, r]) => {
    const p = TableProperties.parse(cfn.resolve(props(r), id));
    const name = ref(id);
    return {
      logicalId: id,
      name,
      arn: attr(id, 'Arn'),
      create: {
        TableName: name,
        BillingMode: p.BillingMode,
        ...(p.BillingMode === 'PAY_PER_REQUEST' ? {} : { ProvisionedThroughput: p.ProvisionedThroughput }),
        AttributeDefinitions: p.AttributeDefinitions,
        KeySchema: p.KeySchema,
        ...(p.GlobalSecondaryIndexes ? { GlobalSecondaryIndexes: p.GlobalSecondaryIndexes } : {}),
        ...(p.LocalSecondaryIndexes ? { LocalSecondaryIndexes: p.LocalSecondaryIndexes } : {}),
      },
      ttlAttribute: p.TimeToLiveSpecification?.Enabled ? p.TimeToLiveSpecification.AttributeName : undefined,
    };
  });

  const machines: MachineModel[] = of('AWS::StepFunctions::StateMachine').map(([id, r]) => {
    const p = props(r);
    let definition: string;
    if (p.DefinitionString !== undefined) definition = str(p.DefinitionString, `${id}.DefinitionString`);
    else if (p.DefinitionS3Location !== undefined)
      definition = readFileSync(asset((p.DefinitionS3Location as { Key: unknown }).Key, `${id}.DefinitionS3Location`), 'utf8');
    else if (p.Definition !== undefined) definition = JSON.stringify(cfn.resolve(p.Definition, `${id}.Definition`));
    else throw new Error(`${id}: a state machine without a definition`);
    const substitutions = (cfn.resolve(p.DefinitionSubstitutions ?? {}, `${id}.DefinitionSubstitutions`) ?? {}) as Record<string, unknown>;
    for (const [key, value] of Object.entries(substitutions)) definition = definition.split(`\${${key}}`).join(String(value));
    return {
      logicalId: id,
      name: attr(id, 'Name'),
      arn: ref(id),
      type: p.StateMachineType === 'EXPRESS' ? 'EXPRESS' : 'STANDARD',
      definition,
      roleArn: str(p.RoleArn, `${id}.RoleArn`),
    };
  });

  const apis = of('AWS::ApiGatewayV2::Api');
  if (apis.length > 1) throw new Error(`template mode serves one HTTP API; the template has ${apis.length}`);
  const integrations = new Map(
    of('AWS::ApiGatewayV2::Integration').map(([id, r]) => {
      const p = props(r);
      return [ref(id), { functionArn: str(p.IntegrationUri, `${id}.IntegrationUri`), timeoutMs: Number(p.TimeoutInMillis ?? 30_000) }];
    }),
  );
  const routes: RouteModel[] = of('AWS::ApiGatewayV2::Route').map(([id, r]) => {
    const p = props(r);
    const target = str(p.Target, `${id}.Target`).replace(/^integrations\//, '');
    const integration = integrations.get(target);
    if (!integration) throw new Error(`${id}: route ${String(p.RouteKey)} targets no integration of the template`);
    return { routeKey: String(p.RouteKey), ...integration };
  });
  const invokePermissions = of('AWS::Lambda::Permission').map(([id, r]) => {
    const p = props(r);
    const fn = str(p.FunctionName, `${id}.FunctionName`);
    // FunctionName may be a name, a partial or a full ARN.
    const functionArn = functions.find((f) => f.arn === fn || f.name === fn)?.arn ?? fn;
    return {
      functionArn,
      principal: String(p.Principal),
      ...(p.SourceArn ? { sourceArn: str(p.SourceArn, `${id}.SourceArn`) } : {}),
    };
  });

  const schedules: ScheduleModel[] = of('AWS::Scheduler::Schedule').flatMap(([id, r]) => {
    const p = ScheduleProperties.parse(cfn.resolve(props(r), id));
    const everyMs = rateMs(p.ScheduleExpression);
    if (p.State === 'DISABLED' || everyMs === undefined) return [];
    return [{ logicalId: id, everyMs, targetArn: p.Target.Arn, roleArn: p.Target.RoleArn, input: p.Target.Input }];
  });

  const managed = new Map(
    of('AWS::IAM::ManagedPolicy').map(([id, r]) => [
      ref(id),
      { name: id, document: cfn.resolve(props(r).PolicyDocument, `${id}.PolicyDocument`) as PolicyDocument },
    ]),
  );
  const roles = new Map<string, RoleModel>();
  for (const [id, r] of of('AWS::IAM::Role')) {
    const p = props(r);
    const policies = ((p.Policies ?? []) as { PolicyName: string; PolicyDocument: unknown }[]).map((x) => ({
      name: x.PolicyName,
      document: cfn.resolve(x.PolicyDocument, `${id}.Policies`) as PolicyDocument,
    }));
    const unknownManagedPolicies: string[] = [];
    for (const arn of (cfn.resolve(p.ManagedPolicyArns ?? [], `${id}.ManagedPolicyArns`) as string[]) ?? []) {
      const known = managed.get(arn);
      if (known) policies.push(known);
      else unknownManagedPolicies.push(arn);
    }
    const name = ref(id);
    roles.set(attr(id, 'Arn'), { arn: attr(id, 'Arn'), name, policies, unknownManagedPolicies });
  }
  const roleByName = new Map([...roles.values()].map((role) => [role.name, role]));
  for (const [id, r] of [...of('AWS::IAM::Policy'), ...of('AWS::IAM::ManagedPolicy')]) {
    const p = props(r);
    const document = cfn.resolve(p.PolicyDocument, `${id}.PolicyDocument`) as PolicyDocument;
    for (const roleName of (cfn.resolve(p.Roles ?? [], `${id}.Roles`) as string[]) ?? [])
      roleByName.get(roleName)?.policies.push({ name: String(p.PolicyName ?? id), document });
  }

  const resourcePolicies = new Map<string, PolicyDocument>();
  for (const [id, r] of of('AWS::SNS::TopicPolicy')) {
    const p = props(r);
    const document = cfn.resolve(p.PolicyDocument, `${id}.PolicyDocument`) as PolicyDocument;
    for (const topic of cfn.resolve(p.Topics, `${id}.Topics`) as string[]) resourcePolicies.set(topic, document);
  }
  // A key's policy is its resource policy: who may encrypt and decrypt with it (a topic's publishers).
  for (const [id, r] of of('AWS::KMS::Key'))
    resourcePolicies.set(attr(id, 'Arn'), cfn.resolve(props(r).KeyPolicy, `${id}.KeyPolicy`) as PolicyDocument);
  for (const [id, r] of of('AWS::SecretsManager::ResourcePolicy')) {
    const p = props(r);
    resourcePolicies.set(str(p.SecretId, `${id}.SecretId`), cfn.resolve(p.ResourcePolicy, `${id}.ResourcePolicy`) as PolicyDocument);
  }

  return {
    stackName,
    region,
    account,
    api: apis.length ? { id: ref(apis[0][0]), url: placement.apiUrl } : undefined,
    functions,
    versions,
    tables,
    machines,
    routes,
    invokePermissions,
    schedules,
    roles,
    resourcePolicies,
    secrets: of('AWS::SecretsManager::Secret').map(([id, r]) => {
      const generate = props(r).GenerateSecretString;
      return {
        arn: ref(id),
        name: ref(id).replace(/^.*:secret:(.*)-[0-9a-f]{6}$/, '$1'),
        ...(generate ? { generate: cfn.resolve(generate, `${id}.GenerateSecretString`) as SecretGenerator } : {}),
      };
    }),
    customResources: Object.entries(resources)
      .filter(([, r]) => r.Type === 'AWS::CloudFormation::CustomResource' || r.Type.startsWith('Custom::'))
      .map(([id, r]) => {
        const properties = cfn.resolve(props(r), id) as Record<string, unknown>;
        return { logicalId: id, type: r.Type, serviceToken: String(properties.ServiceToken), properties };
      }),
    topics: of('AWS::SNS::Topic').map(([id, r]) => {
      const key = props(r).KmsMasterKeyId;
      return {
        arn: ref(id),
        name: attr(id, 'TopicName'),
        ...(key === undefined ? {} : { kmsMasterKeyId: str(key, `${id}.KmsMasterKeyId`) }),
      };
    }),
    subscriptions: of('AWS::SNS::Subscription').map(([id, r]) => {
      const p = cfn.resolve(props(r), id) as Record<string, unknown>;
      return {
        logicalId: id,
        topicArn: String(p.TopicArn),
        protocol: String(p.Protocol),
        endpoint: String(p.Endpoint),
        ...(p.FilterPolicy ? { filterPolicy: p.FilterPolicy as Record<string, unknown> } : {}),
      };
    }),
    buckets: of('AWS::S3::Bucket').map(([id]) => ({ logicalId: id, name: ref(id) })),
  };
}
