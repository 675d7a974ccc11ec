import type { CfnTemplate } from '../local/template/assembly';

/**
 * Published us-east-1 list prices in USD, the first tier of each (aws.amazon.com/<service>/pricing). A
 * million calls cost what the stack counted times these; nothing is estimated by hand.
 */
export const PRICES = {
  /** HTTP API: per request, metered in 512 KB increments. */
  httpApiRequest: 1 / 1e6,
  httpApiMeteredBytes: 512 * 1024,
  /** REST API: per request. */
  restApiRequest: 3.5 / 1e6,
  standardTransition: 25 / 1e6,
  expressRequest: 1 / 1e6,
  /** Express duration: memory in 64 MB steps (the runner's executions carry kilobytes of state), time in 100 ms steps. */
  expressGbSecond: 0.00001667,
  expressMemoryMb: 64,
  expressDurationStepMs: 100,
  lambdaRequest: 0.2 / 1e6,
  lambdaGbSecond: { arm64: 0.0000133334, x86_64: 0.0000166667 },
  /** DynamoDB on demand, per write and read request unit. */
  dynamoWriteUnit: 0.625 / 1e6,
  dynamoReadUnit: 0.125 / 1e6,
  /** CloudWatch Logs ingestion (standard class; vended logs start at the same price), per GB of 10^9 bytes. */
  logsIngestedGb: 0.5,
  /** What CloudWatch Logs adds to each event's message when it sizes a batch; counted as ingested too. */
  logEventOverheadBytes: 26,
  xrayTraceRecorded: 5 / 1e6,
  /** S3 Standard: PUT, COPY, POST, LIST; and GET and the rest. */
  s3Tier1Request: 0.005 / 1000,
  s3Tier2Request: 0.0004 / 1000,
  /** SNS: per publish of up to 64 KB. */
  snsPublish: 0.5 / 1e6,
} as const;

/** Lambda gives a function CPU in proportion to its memory: one whole vCPU at this much (AWS Lambda docs). */
export const FULL_VCPU_MEMORY_MB = 1769;

/**
 * How long an invocation would run on Lambda: the time it waited (on DynamoDB, the upstream) as measured, and
 * its busy time stretched by the share of a vCPU its memory buys. Measured here on a whole core (of a loaded
 * two-core x86 machine), which stands in for one Lambda vCPU.
 */
export function lambdaDurationMs(measuredMs: number, busyMs: number, memoryMb: number): number {
  const share = Math.min(1, memoryMb / FULL_VCPU_MEMORY_MB);
  return measuredMs + Math.min(busyMs, measuredMs) * (1 / share - 1);
}

export type LogLevel = 'ALL' | 'ERROR' | 'FATAL' | 'OFF';

export interface FunctionShape {
  architecture: 'arm64' | 'x86_64';
  /** X-Ray: `Active` samples every invocation that arrives without a decision (Lambda's fixed rule: 1 a second, then 5%). */
  tracing: 'Active' | 'PassThrough';
  logFormat: 'Text' | 'JSON';
  /** JSON format only: platform lines (START, REPORT) are INFO; at WARN and above Lambda writes none. */
  systemLogLevel: string;
}

export interface MachineShape {
  name: string;
  type: 'STANDARD' | 'EXPRESS';
  logLevel: LogLevel;
  includeExecutionData: boolean;
  tracing: boolean;
}

/** What the bill depends on, as the synthesized template declares it. */
export interface DeployedShape {
  /** `functionId`: the logical id of the function the API's integrations invoke (the API Lambda). */
  api: { type: 'HTTP' | 'REST'; accessLogFormat?: string; functionId?: string };
  /** By logical id. */
  functions: Map<string, FunctionShape>;
  /** By state machine name. */
  machines: Map<string, MachineShape>;
}

const props = (r: { Properties?: Record<string, unknown> }) => (r.Properties ?? {}) as Record<string, any>;

/** Reads the API type, each function's architecture, tracing and log settings, and each machine's log level. */
export function deployedShape(template: CfnTemplate): DeployedShape {
  const resources = Object.entries(template.Resources);
  const ofType = (type: string) => resources.filter(([, r]) => r.Type === type);
  const httpApis = ofType('AWS::ApiGatewayV2::Api').filter(([, r]) => props(r).ProtocolType === 'HTTP');
  const restApis = ofType('AWS::ApiGateway::RestApi');
  if (httpApis.length + restApis.length !== 1)
    throw new Error(`the template has ${httpApis.length} HTTP and ${restApis.length} REST APIs; the cost model prices exactly one`);
  const integrated = [...ofType('AWS::ApiGatewayV2::Integration'), ...ofType('AWS::ApiGateway::Method')]
    .map(([, r]) => props(r).IntegrationUri ?? props(r).Integration?.Uri)
    .map((uri) => JSON.stringify(uri ?? '').match(/"Fn::GetAtt":\["([^"]+)","Arn"\]/)?.[1])
    .find(Boolean);
  const api = httpApis.length
    ? {
        type: 'HTTP' as const,
        accessLogFormat: ofType('AWS::ApiGatewayV2::Stage').map(([, r]) => props(r).AccessLogSettings?.Format as string | undefined)[0],
        functionId: integrated,
      }
    : {
        type: 'REST' as const,
        accessLogFormat: ofType('AWS::ApiGateway::Stage').map(([, r]) => props(r).AccessLogSetting?.Format as string | undefined)[0],
        functionId: integrated,
      };

  const functions = new Map<string, FunctionShape>();
  for (const [id, r] of ofType('AWS::Lambda::Function')) {
    const p = props(r);
    functions.set(id, {
      architecture: p.Architectures?.[0] === 'arm64' ? 'arm64' : 'x86_64',
      tracing: p.TracingConfig?.Mode === 'Active' ? 'Active' : 'PassThrough',
      logFormat: p.LoggingConfig?.LogFormat === 'JSON' ? 'JSON' : 'Text',
      systemLogLevel: p.LoggingConfig?.SystemLogLevel ?? 'INFO',
    });
  }
  const machines = new Map<string, MachineShape>();
  for (const [id, r] of ofType('AWS::StepFunctions::StateMachine')) {
    const p = props(r);
    const name = typeof p.StateMachineName === 'string' ? p.StateMachineName : id;
    machines.set(name, {
      name,
      type: p.StateMachineType === 'EXPRESS' ? 'EXPRESS' : 'STANDARD',
      logLevel: (p.LoggingConfiguration?.Level as LogLevel | undefined) ?? 'OFF',
      includeExecutionData: p.LoggingConfiguration?.IncludeExecutionData === true,
      tracing: p.TracingConfiguration?.Enabled === true,
    });
  }
  return { api, functions, machines };
}

/** Bytes CloudWatch Logs ingests for these events. */
export function ingestedBytes(lines: readonly string[]): number {
  return lines.reduce((sum, line) => sum + Buffer.byteLength(line) + PRICES.logEventOverheadBytes, 0);
}

/** The lines a function's output makes: one log event per non-empty line. */
export function logLines(text: string): string[] {
  return text.split('\n').filter((line) => line.trim() !== '');
}

const REQUEST_ID = '8f5cc2b0-3c1d-4e6f-9a7b-0c1d2e3f4a5b';
const TIME = '2026-12-01T12:00:00.000Z';

/**
 * What Lambda itself writes to a function's log for one invocation, in the function's log format: START, END
 * and REPORT lines (Text), or `platform.start` and `platform.report` events (JSON, written only at system
 * level INFO or DEBUG). `maxMemoryUsedMb` is not known here: a three-digit figure stands in.
 */
export function platformLines(fn: FunctionShape, invocation: { durationMs: number; memoryMb: number; traced: boolean }): string[] {
  const billed = Math.ceil(invocation.durationMs);
  const duration = invocation.durationMs.toFixed(2);
  if (fn.logFormat === 'JSON') {
    if (!['DEBUG', 'INFO'].includes(fn.systemLogLevel)) return [];
    const tracing = invocation.traced
      ? { tracing: { spanId: '6e2c1b0a9f8d7e6c', type: 'X-Amzn-Trace-Id', value: 'Root=1-6750a1b2-5ac6c58f5b5daa6532e4f2e8;Sampled=1' } }
      : {};
    return [
      JSON.stringify({ time: TIME, type: 'platform.start', record: { requestId: REQUEST_ID, version: '$LATEST', ...tracing } }),
      JSON.stringify({
        time: TIME,
        type: 'platform.report',
        record: {
          requestId: REQUEST_ID,
          metrics: { durationMs: Number(duration), billedDurationMs: billed, memorySizeMB: invocation.memoryMb, maxMemoryUsedMB: 100 },
          ...tracing,
          status: 'success',
        },
      }),
    ];
  }
  const xray = invocation.traced ? '\nXRAY TraceId: 1-6750a1b2-5ac6c58f5b5daa6532e4f2e8\tSegmentId: 6e2c1b0a9f8d7e6c\tSampled: true\t' : '';
  return [
    `START RequestId: ${REQUEST_ID} Version: $LATEST`,
    `END RequestId: ${REQUEST_ID}`,
    `REPORT RequestId: ${REQUEST_ID}\tDuration: ${duration} ms\tBilled Duration: ${billed} ms\tMemory Size: ${invocation.memoryMb} MB\tMax Memory Used: 100 MB\t${xray}`,
  ];
}

/** The events each level writes: ALL every one; ERROR and FATAL only failures (FATAL only the execution's own). */
function logged(level: LogLevel, type: string): boolean {
  if (level === 'ALL') return true;
  if (level === 'OFF') return false;
  const executionFailure = ['ExecutionFailed', 'ExecutionAborted', 'ExecutionTimedOut'].includes(type);
  if (level === 'FATAL') return executionFailure;
  return executionFailure || /Failed$|TimedOut$/.test(type);
}

/**
 * The events an execution's history makes on AWS, from what the embedded engine recorded (state entered and
 * exited, execution started and ended): each Task state that calls Lambda adds TaskScheduled and
 * TaskStarted after it is entered and TaskSucceeded before it is left, as Step Functions records them.
 */
export function awsHistory(history: readonly { type: string; state?: string }[]): { type: string; state?: string }[] {
  const events: { type: string; state?: string }[] = [];
  for (const e of history) {
    if (e.type === 'TaskStateExited') events.push({ type: 'TaskSucceeded', state: e.state });
    if (e.type === 'StateFailed') events.push({ type: 'TaskFailed', state: e.state });
    else if (e.type !== 'StateRetried' && e.type !== 'StateCaught') events.push(e);
    if (e.type === 'TaskStateEntered') events.push({ type: 'TaskScheduled', state: e.state }, { type: 'TaskStarted', state: e.state });
  }
  return events;
}

/**
 * The log events an execution writes at its machine's level, in Step Functions' CloudWatch Logs format (no
 * input or output: the construct sets `includeExecutionData: false`, and with it they would be larger).
 */
export function executionLogLines(
  machine: MachineShape,
  execution: { executionArn: string; history: readonly { type: string; state?: string }[] },
): string[] {
  const roleArn = `arn:aws:iam::123456789012:role/ToolRunner-RunnerInvocation${machine.type === 'EXPRESS' ? 'Express' : ''}Role-AbCdEf123456`;
  const task = { resourceType: 'lambda', resource: 'invoke' };
  const details = (e: { type: string; state?: string }): Record<string, unknown> => {
    if (e.type === 'ExecutionStarted') return { inputDetails: { truncated: false }, roleArn };
    if (e.type === 'ExecutionSucceeded') return { outputDetails: { truncated: false } };
    if (e.type.endsWith('StateEntered')) return { name: e.state, inputDetails: { truncated: false } };
    if (e.type.endsWith('StateExited')) return { name: e.state, outputDetails: { truncated: false } };
    if (e.type === 'TaskScheduled') return { ...task, region: 'us-east-1', timeoutInSeconds: 900 };
    if (e.type === 'TaskSucceeded') return { ...task, outputDetails: { truncated: false } };
    return task;
  };
  return awsHistory(execution.history)
    .map((e, i) => ({ e, id: i + 1 }))
    .filter(({ e }) => logged(machine.logLevel, e.type))
    .map(({ e, id }) =>
      JSON.stringify({
        id: String(id),
        type: e.type,
        details: details(e),
        previous_event_id: String(id - 1),
        event_timestamp: '1764590400000',
        execution_arn: execution.executionArn,
        redrive_count: '0',
      }),
    );
}

/** One API access log line: the stage's format with each `$context` variable as API Gateway fills it for this request. */
export function accessLogLine(
  format: string,
  request: { method: string; path: string; status: number; responseBytes: number; latencyMs: number },
): string {
  const values: Record<string, string> = {
    requestId: 'JxTq3hQKoAMEbXw=',
    'identity.sourceIp': '203.0.113.10',
    requestTime: '01/Dec/2026:12:00:00 +0000',
    httpMethod: request.method,
    routeKey: request.path.startsWith('/v1/') ? 'ANY /v1/{proxy+}' : `ANY ${request.path}`,
    path: request.path,
    status: String(request.status),
    protocol: 'HTTP/1.1',
    responseLength: String(request.responseBytes),
    responseLatency: String(Math.round(request.latencyMs)),
    integrationLatency: String(Math.max(0, Math.round(request.latencyMs) - 2)),
    integrationStatus: String(request.status),
    'error.message': '-',
  };
  return format.replace(/\$context\.([A-Za-z.]+)/g, (_, name: string) => values[name] ?? '-');
}
