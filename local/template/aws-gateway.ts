import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { EventualReads } from './eventual-reads';
import type { Caller, IamCheck } from './iam';
import { type ServiceReply, snsError } from './local-services';

/** One AWS API call the IAM check looked at: which action on which resource. */
export interface Check {
  action: string;
  resource: string;
}

/** A call the IAM check refused, for tests and the operator. */
export interface Denial extends Check {
  role: string;
  session: string;
  at: string;
}

/** One AWS API call a function made and IAM allowed, as `npm run cost` counts it. */
export interface AwsCall {
  /** The service it was signed for: `dynamodb`, `states`, `secretsmanager`, `sns`, `s3`, `lambda`. */
  service: string;
  /** The action, e.g. `TransactWriteItems`, `StartSyncExecution`, `Publish`. */
  operation: string;
  /** The calling function's name (its role session). */
  session: string;
  requestBytes: number;
  /** The resources IAM checked it against (tables, state machines, topics). */
  resources: string[];
  /** DynamoDB only: the capacity the call consumed, as DynamoDB reports it (`ReturnConsumedCapacity: TOTAL`). */
  consumed?: { TableName?: string; CapacityUnits?: number }[];
  /** DynamoDB single-item requests only: the item's key as sent (attribute values, e.g. `{ shard: { S: '…' } }`). */
  key?: Record<string, unknown>;
}

/** The DynamoDB actions that report the capacity they consume. */
const METERED_DYNAMO = new Set([
  'GetItem',
  'PutItem',
  'UpdateItem',
  'DeleteItem',
  'Query',
  'Scan',
  'BatchGetItem',
  'BatchWriteItem',
  'TransactGetItems',
  'TransactWriteItems',
]);

/** Where allowed calls go: the real local backends. */
export interface Backends {
  /** DynamoDB Local. */
  dynamodb: string;
  /** The embedded Step Functions endpoint. */
  states: string;
  /** s3rver (path-style requests). */
  s3: string;
  secretsmanager(target: string, body: Record<string, unknown>): Promise<ServiceReply>;
  sns(form: URLSearchParams): ServiceReply;
  /**
   * What `FunctionName` (a name, partial or full ARN, qualified or not) invokes: the ARN IAM checks, the
   * function that runs and its version; undefined when no function or version has it.
   */
  lambdaTarget(functionName: string): { arn: string; functionArn: string; version: string } | undefined;
  /** A synchronous invocation of the local function (lambda-pool.ts), answered as Lambda's Invoke API answers. */
  lambdaInvoke(functionArn: string, payload: Buffer): Promise<LambdaInvokeReply>;
}

/**
 * What Lambda's Invoke API answers: 200 with the function's result, 200 with `X-Amz-Function-Error` and its
 * error object when the function failed, or Lambda's own error (throttled, too large) as a status with
 * `x-amzn-errortype`, when the function never ran.
 */
export type LambdaInvokeReply =
  | { ran: true; payload: string; functionError?: 'Unhandled' }
  | { ran: false; status: number; type: string; message: string };

interface Arns {
  region: string;
  account: string;
  secretArn(id: string): string | undefined;
}

/** The parts of a DynamoDB request that name resources. */
const DynamoRequest = z
  .object({
    TableName: z.string().optional(),
    IndexName: z.string().optional(),
    RequestItems: z.record(z.string(), z.unknown()).optional(),
    TransactItems: z.array(z.record(z.string(), z.object({ TableName: z.string() }).passthrough())).optional(),
  })
  .passthrough();
/** The parts of a Step Functions request that name resources. */
const StatesRequest = z
  .object({ stateMachineArn: z.string().optional(), executionArn: z.string().optional(), activityArn: z.string().optional() })
  .passthrough();

/**
 * What IAM checks for one DynamoDB request: each table an operation touches, per item for transactions
 * (there is no TransactWriteItems action: each item's own Put, Update, Delete or ConditionCheck counts),
 * and a query on an index names the index.
 */
export function dynamoChecks(operation: string, body: z.infer<typeof DynamoRequest>, arns: Arns): Check[] {
  const table = (name: string) => (name.startsWith('arn:') ? name : `arn:aws:dynamodb:${arns.region}:${arns.account}:table/${name}`);
  switch (operation) {
    case 'BatchGetItem':
    case 'BatchWriteItem':
      return Object.keys(body.RequestItems ?? {}).map((name) => ({ action: `dynamodb:${operation}`, resource: table(name) }));
    case 'TransactWriteItems':
    case 'TransactGetItems':
      return (body.TransactItems ?? []).flatMap((item) =>
        Object.entries(item).map(([kind, op]) => ({
          action: `dynamodb:${kind === 'ConditionCheck' ? 'ConditionCheckItem' : `${kind}Item`}`,
          resource: table(op.TableName),
        })),
      );
    default: {
      if (!body.TableName) return [{ action: `dynamodb:${operation}`, resource: '*' }];
      const arn = table(body.TableName);
      return [{ action: `dynamodb:${operation}`, resource: body.IndexName ? `${arn}/index/${body.IndexName}` : arn }];
    }
  }
}

/** What IAM checks for one Step Functions request. */
export function statesChecks(operation: string, body: z.infer<typeof StatesRequest>): Check[] {
  return [{ action: `states:${operation}`, resource: body.stateMachineArn ?? body.executionArn ?? body.activityArn ?? '*' }];
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** `Credential=AKID/20240101/us-east-1/dynamodb/aws4_request` → the key id and the service it was signed for. */
function credentialOf(req: IncomingMessage): { keyId: string; service: string } | undefined {
  const m = /Credential=([^/]+)\/[^/]+\/[^/]+\/([^/]+)\/aws4_request/.exec(String(req.headers.authorization ?? ''));
  return m ? { keyId: m[1], service: m[2] } : undefined;
}

/** A JSON-protocol service's error, as the SDK reads it (`__type`). */
function jsonError(contentType: string, status: number, type: string, message: string): ServiceReply {
  return { status, contentType, body: JSON.stringify({ __type: type, message, Message: message }) };
}

/** S3's XML error, as the SDK reads it. */
function s3Error(status: number, code: string, message: string): ServiceReply {
  const escaped = message.replace(/[<>&]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;' })[c]!);
  return {
    status,
    contentType: 'application/xml',
    body: `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${escaped}</Message></Error>`,
  };
}

function send(res: ServerResponse, reply: ServiceReply): void {
  res.writeHead(reply.status, { 'content-type': reply.contentType, 'x-amzn-requestid': crypto.randomUUID() });
  res.end(reply.body);
}

/**
 * Sends the call on to its backend. With `answered`, the answer is read whole and handed to it before it is
 * passed on; what it returns replaces the answer's body (then without DynamoDB's checksum of the original).
 */
function forward(
  req: IncomingMessage,
  body: Buffer,
  backend: string,
  res: ServerResponse,
  answered?: (answer: Buffer, status: number) => Buffer | undefined,
): void {
  const url = new URL(req.url ?? '/', backend);
  const headers = { ...req.headers, host: url.host, 'content-length': String(body.length) };
  const out = httpRequest(url, { method: req.method, headers }, (answer) => {
    const status = answer.statusCode ?? 502;
    if (!answered) {
      res.writeHead(status, answer.headers);
      return answer.pipe(res);
    }
    const chunks: Buffer[] = [];
    answer.on('data', (c: Buffer) => chunks.push(c));
    answer.on('end', () => {
      const whole = Buffer.concat(chunks);
      const replaced = answered(whole, status);
      if (!replaced) {
        res.writeHead(status, answer.headers);
        return res.end(whole);
      }
      const { 'x-amz-crc32': _crc, ...kept } = answer.headers;
      res.writeHead(status, { ...kept, 'content-length': String(replaced.length) });
      res.end(replaced);
    });
  });
  out.on('error', (error) => {
    if (!res.headersSent) send(res, jsonError('application/x-amz-json-1.0', 500, 'InternalFailure', error.message));
    else res.destroy();
  });
  out.end(body);
}

/** One item read straight from DynamoDB Local, strongly consistent (the image before a write). */
async function readItem(backend: string, table: string, key: Record<string, unknown>): Promise<Record<string, AttributeValue> | undefined> {
  const answer = await fetch(backend, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-amz-json-1.0',
      'x-amz-target': 'DynamoDB_20120810.GetItem',
      authorization: 'AWS4-HMAC-SHA256 Credential=local/20240101/local/dynamodb/aws4_request, SignedHeaders=host, Signature=local',
    },
    body: JSON.stringify({ TableName: table, Key: key, ConsistentRead: true }),
  });
  const out = (await answer.json()) as { Item?: Record<string, AttributeValue> };
  return out.Item;
}

/**
 * The one endpoint every function's AWS SDK calls: it finds the caller by the access key id its request was
 * signed with (each function has its own), the action from the request (X-Amz-Target, or SNS's Action), and
 * the resources from the body; the IAM check decides; a refused call is answered as the service answers
 * AccessDenied, an allowed one goes on to the real local backend. Signatures are not verified: the key id
 * says who calls, no one else can reach this loopback endpoint.
 */
export async function startAwsGateway(options: {
  callers: Map<string, Caller>;
  iam: IamCheck;
  backends: Backends;
  arns: Arns;
  onDenied?(denial: Denial): void;
  /**
   * Told of every allowed call. DynamoDB calls are then made with `ReturnConsumedCapacity: TOTAL` (the SDK
   * ignores what it did not ask for), so their capacity units can be counted.
   */
  onCall?(call: AwsCall): void;
  /** The `throttle` fault: whether to refuse this Step Functions or Lambda API call as throttled. */
  throttles?(): boolean;
  /** The `eventual-reads` fault: DynamoDB reads that do not ask for strong consistency see writes late. */
  eventualReads?: EventualReads;
}): Promise<{ url: string; denials: Denial[]; close(): Promise<void> }> {
  const denials: Denial[] = [];
  const { callers, iam, backends, arns } = options;

  const deny = (caller: Caller, check: Check, message: string) => {
    const denial = { ...check, role: caller.role.name, session: caller.session, at: new Date().toISOString() };
    denials.push(denial);
    options.onDenied?.(denial);
    return message;
  };

  /** S3's REST API, path-style (`/bucket/key`): objects are read and written; IAM checks the object's ARN. */
  const handleS3 = async (req: IncomingMessage, body: Buffer, res: ServerResponse, caller: Caller) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://local').pathname).replace(/^\//, '');
    const action = req.method === 'PUT' ? 's3:PutObject' : req.method === 'GET' || req.method === 'HEAD' ? 's3:GetObject' : undefined;
    if (!action || !path.includes('/'))
      return send(res, s3Error(400, 'NotImplemented', `the local stack serves object reads and writes only (${req.method} /${path})`));
    const check = { action, resource: `arn:aws:s3:::${path}` };
    const decision = await iam.authorize(caller, check.action, check.resource);
    if (!decision.allowed) return send(res, s3Error(403, 'AccessDenied', deny(caller, check, decision.message)));
    return forward(req, body, backends.s3, res);
  };

  /** Lambda's Invoke (`POST /2015-03-31/functions/{name}/invocations`), synchronous only; IAM checks the function's ARN. */
  const handleLambda = async (req: IncomingMessage, body: Buffer, res: ServerResponse, caller: Caller) => {
    const restError = (status: number, type: string, message: string) => {
      res.writeHead(status, { 'content-type': 'application/json', 'x-amzn-errortype': type, 'x-amzn-requestid': crypto.randomUUID() });
      res.end(JSON.stringify({ Type: 'User', message }));
    };
    const match = /^\/2015-03-31\/functions\/([^/]+)\/invocations$/.exec(new URL(req.url ?? '/', 'http://local').pathname);
    if (req.method !== 'POST' || !match) return restError(400, 'InvalidRequestContentException', 'the local stack serves Invoke only');
    const type = String(req.headers['x-amz-invocation-type'] ?? 'RequestResponse');
    if (type !== 'RequestResponse') return restError(400, 'InvalidParameterValueException', `invocation type ${type} is not served here`);
    const name = decodeURIComponent(match[1]);
    const target = backends.lambdaTarget(name);
    const arn = target?.arn;
    const check = {
      action: 'lambda:InvokeFunction',
      resource: arn ?? (name.startsWith('arn:') ? name : `arn:aws:lambda:${arns.region}:${arns.account}:function:${name}`),
    };
    const decision = await iam.authorize(caller, check.action, check.resource);
    if (!decision.allowed) return restError(403, 'AccessDeniedException', deny(caller, check, decision.message));
    if (!arn) return restError(404, 'ResourceNotFoundException', `Function not found: ${check.resource}`);
    if (options.throttles?.()) return restError(429, 'TooManyRequestsException', 'Rate Exceeded.');
    options.onCall?.({ service: 'lambda', operation: 'Invoke', session: caller.session, requestBytes: body.length, resources: [arn] });
    const reply = await backends.lambdaInvoke(target!.functionArn, body);
    if (!reply.ran) return restError(reply.status, reply.type, reply.message);
    res.writeHead(200, {
      'content-type': 'application/json',
      'x-amz-executed-version': target!.version,
      'x-amzn-requestid': crypto.randomUUID(),
      ...(reply.functionError ? { 'x-amz-function-error': reply.functionError } : {}),
    });
    res.end(reply.payload);
  };

  /**
   * DynamoDB: metered calls ask for their consumed capacity; under `eventual-reads`, a write first reads the
   * images it replaces, and a read that may be answered from a replica is answered as a lagging one would.
   */
  const handleDynamo = async (
    req: IncomingMessage,
    target: string,
    parsed: Record<string, unknown>,
    body: Buffer,
    res: ServerResponse,
    call: AwsCall,
  ) => {
    const { onCall, eventualReads } = options;
    const metered = Boolean(onCall) && METERED_DYNAMO.has(target);
    const writes = eventualReads?.writtenKeys(target, parsed) ?? [];
    const lagging = eventualReads?.isEventualRead(target, parsed) ?? false;
    if (!metered && !writes.length && !lagging) {
      onCall?.(call);
      return forward(req, body, backends.dynamodb, res);
    }
    const before = await Promise.all(writes.map((w) => readItem(backends.dynamodb, w.table, w.key)));
    const request = metered ? Buffer.from(JSON.stringify({ ...parsed, ReturnConsumedCapacity: 'TOTAL' })) : body;
    return forward(req, request, backends.dynamodb, res, (answer, status) => {
      const json = safeJson(answer.toString('utf8')) as Record<string, unknown> | undefined;
      if (metered) {
        const consumed = json?.ConsumedCapacity as AwsCall['consumed'] | NonNullable<AwsCall['consumed']>[number] | undefined;
        onCall!({ ...call, consumed: consumed ? [consumed].flat() : [] });
      } else onCall?.(call);
      if (status !== 200 || !json || !eventualReads) return undefined;
      if (writes.length) eventualReads.written(writes, before);
      return lagging ? Buffer.from(JSON.stringify(eventualReads.lagged(target, parsed, json))) : undefined;
    });
  };

  const handle = async (req: IncomingMessage, body: Buffer, res: ServerResponse) => {
    const credential = credentialOf(req);
    const caller = credential && callers.get(credential.keyId);
    const service = credential?.service ?? '';
    const target = String(req.headers['x-amz-target'] ?? '').replace(/^.*\./, '');
    const contentType = String(req.headers['content-type'] ?? 'application/x-amz-json-1.0');
    if (!caller) {
      if (service === 'sns')
        return send(res, snsError(403, 'InvalidClientTokenId', 'The security token included in the request is invalid.'));
      return send(
        res,
        jsonError(contentType, 400, 'UnrecognizedClientException', 'The security token included in the request is invalid.'),
      );
    }
    if (service === 's3') return handleS3(req, body, res, caller);
    if (service === 'lambda') return handleLambda(req, body, res, caller);
    const form = service === 'sns' ? new URLSearchParams(body.toString('utf8')) : undefined;
    let parsed: Record<string, unknown> = {};
    if (!form) {
      const json = z.record(z.string(), z.unknown()).safeParse(safeJson(body.toString('utf8') || '{}'));
      if (!json.success) return send(res, jsonError(contentType, 400, 'SerializationException', 'the request body is not a JSON object'));
      parsed = json.data;
    }
    let checks: Check[];
    if (service === 'dynamodb') {
      const request = DynamoRequest.safeParse(parsed);
      if (!request.success) return send(res, jsonError(contentType, 400, 'ValidationException', request.error.message));
      checks = dynamoChecks(target, request.data, arns);
    } else if (service === 'states') {
      const request = StatesRequest.safeParse(parsed);
      if (!request.success) return send(res, jsonError(contentType, 400, 'ValidationException', request.error.message));
      checks = statesChecks(target, request.data);
    } else if (service === 'secretsmanager') {
      const id = String(parsed.SecretId ?? '*');
      checks = [{ action: `secretsmanager:${target}`, resource: arns.secretArn(id) ?? id }];
    } else if (service === 'sns') {
      checks = [{ action: `sns:${form!.get('Action')}`, resource: form!.get('TopicArn') ?? form!.get('TargetArn') ?? '*' }];
    } else {
      return send(res, jsonError(contentType, 400, 'UnknownOperationException', `service ${service} is not part of the local stack`));
    }
    for (const check of checks) {
      const decision = await iam.authorize(caller, check.action, check.resource);
      if (decision.allowed) continue;
      const denial = { ...check, role: caller.role.name, session: caller.session, at: new Date().toISOString() };
      denials.push(denial);
      options.onDenied?.(denial);
      if (service === 'sns') return send(res, snsError(403, 'AuthorizationError', decision.message));
      const type = service === 'secretsmanager' ? 'AccessDeniedException' : 'com.amazon.coral.service#AccessDeniedException';
      return send(res, jsonError(contentType, 400, type, decision.message));
    }
    const call = {
      service,
      operation: target || (form?.get('Action') ?? ''),
      session: caller.session,
      requestBytes: body.length,
      resources: checks.map((c) => c.resource),
      ...(service === 'dynamodb' && parsed.Key && typeof parsed.Key === 'object' ? { key: parsed.Key as Record<string, unknown> } : {}),
    };
    if (service === 'dynamodb') return handleDynamo(req, target, parsed, body, res, call);
    if (service === 'states' && options.throttles?.())
      return send(res, jsonError(contentType, 400, 'ThrottlingException', 'Rate exceeded'));
    options.onCall?.(call);
    if (service === 'states') return forward(req, body, backends.states, res);
    if (service === 'secretsmanager') return send(res, await backends.secretsmanager(target, parsed));
    return send(res, backends.sns(form!));
  };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      handle(req, Buffer.concat(chunks), res).catch((error: Error) => {
        if (!res.headersSent) send(res, jsonError('application/x-amz-json-1.0', 500, 'InternalFailure', error.message));
      });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    denials,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}
