import { createHash, randomBytes, randomInt } from 'node:crypto';
import { appendFileSync, cpSync, existsSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { TABLE_ENV, type TableNames } from '../../functions/adapters/tables';
import { depsFromEnv, parseEnv } from '../../functions/handlers/runtime';
import { sweep } from '../../functions/steps/resume';
import { gatewayAnswer } from '../api-gateway-event';
import { createTables, localClient } from '../dynamodb-local';
import { LocalStepFunctions } from '../sfn-endpoint';
import {
  blobPart,
  dynamoPart,
  ensureDataDir,
  progressReporter,
  serveApiPart,
  startSandboxPart,
  sweeperPart,
  type Started,
} from '../stack-parts';
import type { Stack, StackOptions } from '../stack';
import { ensureConfig } from '../config-file';
import { ensureAssembly, readAssembly } from './assembly';
import { type LambdaInvokeReply, startAwsGateway } from './aws-gateway';
import { AccountConcurrency, accountFromEnv, maxInstancesFromEnv } from './account-concurrency';
import { invokeAsync } from './async-invoke';
import { type AwsFaults, awsFaultsFromEnv } from './aws-faults';
import { EventualReads } from './eventual-reads';
import { FunctionProcess } from './function-process';
import { lambdaNode } from './lambda-node';
import { httpApi } from './http-api';
import { type Caller, IamCheck, loadIamSimulator } from './iam';
import { LambdaError, LambdaFunction, PREWARMED } from './lambda-pool';
import { secretsManager, snsTopics } from './local-services';
import { startCloudWatch } from './cloudwatch';
import { EmailOutbox } from './email-outbox';
import { bindStack, type FunctionModel, Intrinsics, invokeTarget, type RoleModel, stackIdOf } from './stack-model';
import { functionChanges, generatedSecretValue, machineChanges, regeneratedSecrets, updateOrder } from './redeploy';
import { seeded } from '../seeded';
import { createCustomResources } from './custom-resources';
import { lambdaBundle } from '../bundles';
import { FUNCTIONS, type FunctionName } from '../../infra/functions';
import { toolsEntryFor } from '../../infra/bundling';

/**
 * The variables the local stack adds to a function's own (the template's): where AWS is (the region and the
 * local endpoints, all one IAM-checking gateway) and who the function is (credentials of its own, so the
 * gateway knows which role calls). Nothing else: not even the Lambda runtime's AWS_LAMBDA_* variables.
 */
export const ADDED_VARIABLES = [
  'AWS_REGION',
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
  'AWS_ENDPOINT_URL_DYNAMODB',
  'AWS_ENDPOINT_URL_SFN',
  'AWS_ENDPOINT_URL_SECRETS_MANAGER',
  'AWS_ENDPOINT_URL_SNS',
  'AWS_ENDPOINT_URL_S3',
  'AWS_ENDPOINT_URL_LAMBDA',
] as const;

/**
 * The embedded stack built from the synthesized cloud assembly of the CDK app `cdk.json` names (the repo's
 * demo app, or a user's own with the ToolRunner construct): every function from
 * its bundle in its own worker threads with exactly its template environment, memory and timeout; every
 * AWS call it makes checked against its role's policies; the HTTP API's routes, both state machines, the
 * tables and the sweep schedule as the template declares them; Secrets Manager and SNS served locally.
 */
export async function startTemplateParts(options: StackOptions, started: Started, stop: () => Promise<void>): Promise<Stack> {
  const progress = progressReporter(options.onProgress);
  if (options.tools)
    throw new Error("template mode runs the tools your CDK app's ToolRunner construct bundles (its tools.entry), not a --tools module");
  ensureDataDir(options.dataDir);
  ensureConfig(options.configPath);
  await loadIamSimulator();

  const assemblyDir = async () => {
    if (options.assemblyDir) return resolve(options.assemblyDir);
    const { dir, synthesizedMs } = await ensureAssembly({ onProgress: progress });
    progress(synthesizedMs ? `synthesized the CDK app in ${(synthesizedMs / 1000).toFixed(1)} s` : `cloud assembly ${dir} is current`);
    return dir;
  };
  const dir = await assemblyDir();
  let assembly = readAssembly(dir);
  if (options.editTemplate) {
    assembly.template = structuredClone(assembly.template);
    options.editTemplate(assembly.template);
  }
  // Before anything starts: a template whose reservations the account cannot give fails as its deploy would.
  const account = new AccountConcurrency(accountFromEnv(), reservationsOf(assembly.template));
  const maxInstances = maxInstancesFromEnv();

  // The sandbox is the demo app's upstream (its tools' SANDBOX_URL); an app of one's own has its own upstreams.
  const sandboxUrl = usesSandbox(assembly.template)
    ? await startSandboxPart(options.dataDir, options.sandboxPort ?? 0, started, progress)
    : undefined;

  // The API listens first: its URL is the `ApiEndpoint` the functions' environment names (PUBLIC_BASE_URL), and no
  // part that takes a port of the OS's choosing (DynamoDB Local, the blob store, the engine) can take PORT first.
  let serve: (request: Request) => Promise<Response> = async () => gatewayAnswer('integrationTimeout');
  const apiPort = await serveApiPart((request) => serve(request), options.port ?? 0, started);
  const dynamoEndpoint = await dynamoPart(options, started, progress);
  const apiUrl = `http://127.0.0.1:${apiPort}`;
  const placement = { tablePrefix: options.tablePrefix ?? 'toolrunner', apiUrl, sandboxUrl };
  let model = bindStack(assembly, placement);
  if (options.toolsEntry) await useToolsModule(model.functions, options.toolsEntry);
  progress(
    `template of stack ${model.stackName}: ${model.functions.length} functions, ${model.machines.length} state machines, ${model.tables.length} tables, ${model.routes.length} routes`,
  );

  // The template's buckets (the blob store) in s3rver, under the data directory like DynamoDB Local's files.
  const s3Endpoint = model.buckets.length
    ? await blobPart(
        options.dataDir,
        model.buckets.map((b) => b.name),
        started,
        progress,
      )
    : undefined;

  const admin = localClient(dynamoEndpoint);
  await createTables(admin, model.tables);
  admin.destroy();
  progress('tables created from the template; starting the state machines…');

  for (const r of model.roles.values())
    for (const policy of r.unknownManagedPolicies)
      console.error(`warning: ${r.name}: managed policy ${policy} is not in the template; calls it would allow are denied here`);
  const role = (arn: string): RoleModel => {
    const found = model.roles.get(arn);
    if (!found) throw new Error(`template mode: role ${arn} is not in the template`);
    return found;
  };
  const iam = new IamCheck(model.account, model.region, model.resourcePolicies);
  const faults = awsFaultsFromEnv();
  progress(
    `account concurrency ${account.pool}: reserved ${[...account.reservations].map(([id, r]) => `${id} ${r}`).join(', ') || 'none'}${account.reservedElsewhere ? `, ${account.reservedElsewhere} elsewhere` : ''}, unreserved ${account.unreserved}, at most ${maxInstances} instances a function here`,
  );
  const functions = new Map<string, LambdaFunction>();
  const invokeAs = (caller: Caller) => async (functionArn: string) => {
    const decision = await iam.authorize(caller, 'lambda:InvokeFunction', functionArn);
    return decision.allowed ? undefined : decision.message;
  };

  const machineCallers = new Map(model.machines.map((m) => [m.arn, { role: role(m.roleArn), session: m.name }]));
  const taskTarget = (arn: string) => async (payload: unknown) => {
    try {
      // The `throttle` fault: Lambda's API refuses Step Functions' call before the function runs.
      if (faults.throttles()) throw new LambdaError('TooManyRequestsException', 'Rate Exceeded.', false);
      const fn = functions.get(arn);
      if (!fn) throw new LambdaError('ResourceNotFoundException', `Function not found: ${arn}`, false);
      return await fn.invoke(payload);
    } catch (error) {
      // Lambda's own refusals reach Step Functions as Lambda.<Exception>; function errors by their errorType.
      if (error instanceof LambdaError && !error.functionError) error.name = `Lambda.${error.name}`;
      throw error;
    }
  };
  // By ARN, looked up at each task: an update adds functions here and switches those it changes.
  const taskTargets = Object.fromEntries(model.functions.map((f) => [f.arn, taskTarget(f.arn)]));
  const engine = new LocalStepFunctions(
    model.machines.map((m) => ({ name: m.name, arn: m.arn, definition: m.definition, type: m.type })),
    taskTargets,
    options.meter?.executed,
    (machineArn, functionArn) => invokeAs(machineCallers.get(machineArn)!)(functionArn),
    (fn, payload) => faults.deliverAgain('an Express task', () => fn(payload)),
  );
  const sfnEndpoint = await engine.listen();
  started.push(() => engine.close());

  const configSecrets = new Set(model.functions.map((f) => f.environment.CONFIG_SECRET_ARN).filter(Boolean));
  // The principals documents are the local principals file; the signing key is kept in the data directory.
  const secrets = secretsManager(model.secrets, options.configPath, {
    fileBacked: configSecrets,
    storeDir: join(options.dataDir, 'secrets'),
  });
  // Email subscriptions deliver to files: the confirmation request first, nothing before it is confirmed.
  const outbox = new EmailOutbox(
    join(options.dataDir, 'outbox'),
    join(options.dataDir, 'sns-subscriptions.json'),
    model.subscriptions,
    (line) => console.error(line),
  );
  await outbox.start();
  started.push(() => outbox.close());
  const topics = snsTopics(model.topics, (m) => {
    printApprovalLink(m);
    return outbox.deliver({ topicArn: m.topicArn, subject: m.subject, text: m.message, attributes: m.attributes });
  });
  const cloudwatch = await startCloudWatch({
    assembly,
    placement,
    model,
    iam,
    timeScale: options.alarmTimeScale ?? alarmTimeScaleFromEnv(),
    published: topics.published,
    outbox,
    log: (line) => console.error(line),
  });
  started.push(() => cloudwatch.close());
  const callers = new Map<string, Caller>();
  const gateway = await startAwsGateway({
    callers,
    iam,
    backends: {
      dynamodb: dynamoEndpoint,
      states: sfnEndpoint,
      s3: s3Endpoint ?? 'http://127.0.0.1:9',
      secretsmanager: (t, b) => secrets.handle(t, b),
      sns: (f) => topics.handle(f),
      lambdaTarget: (name) => invokeTarget(model, name),
      lambdaInvoke: (functionArn, payload) => invokeAsLambdaApi(functions.get(functionArn)!, payload),
    },
    arns: { region: model.region, account: model.account, secretArn: (id) => secrets.find(id)?.arn },
    onDenied: (d) => console.error(`iam: ${d.session} (role ${d.role}) may not ${d.action} on ${d.resource}: AccessDenied`),
    onCall: options.meter?.awsCall,
    throttles: () => faults.throttles(),
    eventualReads: faults.enabled.has('eventual-reads')
      ? new EventualReads(
          model.tables.map((t) => t.create),
          () => faults.readLagMs(),
          () => faults.countStaleRead(),
        )
      : undefined,
  });
  started.push(() => gateway.close());

  // Each function in a process of its own, on its Lambda runtime's Node.js major.
  const runtimes = [...new Set(model.functions.map((f) => f.runtime))];
  const nodes = new Map(runtimes.map((r) => [r, lambdaNode(r)]));
  for (const node of nodes.values()) if (node.note) console.error(`warning: ${node.note}`);
  const nodeOf = (runtime: string) => {
    if (!nodes.has(runtime)) nodes.set(runtime, lambdaNode(runtime));
    return nodes.get(runtime)!;
  };
  const processOf = (f: FunctionModel) => new FunctionProcess(nodeOf(f.runtime).binary, f.logicalId, (line) => console.error(line));
  const processes = new Map(model.functions.map((f) => [f.arn, processOf(f)]));
  started.push(async () => {
    await Promise.all([...processes.values()].map((p) => p.close()));
  });
  const versions = await Promise.all(model.functions.map(async (f) => `${f.runtime} on Node ${await processes.get(f.arn)!.version}`));
  progress(`${processes.size} function processes (${[...new Set(versions)].join(', ')})`);

  const instance = randomBytes(8).toString('hex');
  const logDir = join(options.dataDir, 'logs');
  /**
   * With updates on: the function's bundle copied under the data directory, since an update replaces the
   * assembly (and its asset directories) while the switched-out environments may still start new ones.
   */
  const pinned = (codeDir: string) => {
    const copy = join(options.dataDir, 'code', `${basename(codeDir)}-${createHash('sha256').update(codeDir).digest('hex').slice(0, 8)}`);
    if (!existsSync(copy)) cpSync(codeDir, copy, { recursive: true });
    return copy;
  };
  // In-flight invocations of each function object: a switched-out one closes once its last one ends.
  const inFlight = new Map<LambdaFunction, { count: number; drained?: () => void }>();
  const build = (f: FunctionModel): LambdaFunction => {
    const keyId = `ASIA${createHash('sha256').update(`${instance}/${f.logicalId}`).digest('hex').slice(0, 16).toUpperCase()}`;
    callers.set(keyId, { role: role(f.roleArn), session: f.name });
    const added: Record<(typeof ADDED_VARIABLES)[number], string> = {
      AWS_REGION: model.region,
      AWS_ACCESS_KEY_ID: keyId,
      AWS_SECRET_ACCESS_KEY: randomBytes(30).toString('base64url'),
      AWS_SESSION_TOKEN: randomBytes(48).toString('base64url'),
      AWS_ENDPOINT_URL_DYNAMODB: gateway.url,
      AWS_ENDPOINT_URL_SFN: gateway.url,
      AWS_ENDPOINT_URL_SECRETS_MANAGER: gateway.url,
      AWS_ENDPOINT_URL_SNS: gateway.url,
      AWS_ENDPOINT_URL_S3: gateway.url,
      AWS_ENDPOINT_URL_LAMBDA: gateway.url,
    };
    const meter = options.meter;
    // What CloudWatch Logs would extract from the function's log: EMF metrics and metric filters, line by line.
    let partial = '';
    const logged = (chunk: Buffer) => {
      const lines = (partial + chunk.toString('utf8')).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) if (line.includes('{')) cloudwatch.logged(f.logGroupName, line);
    };
    const fn = new LambdaFunction({
      ...f,
      codeDir: options.onDeploy ? pinned(f.codeDir) : f.codeDir,
      environment: { ...f.environment, ...added },
      logFile: join(logDir, `${f.logicalId}.log`),
      concurrency: account.of(f.logicalId),
      maxConcurrency: Math.min(account.of(f.logicalId).limit, maxInstances),
      startInstance: processes.get(f.arn)!.start,
      coldStartDelayMs: () => faults.coldStartDelayMs(),
      meter: {
        invoked: (ms, busyMs) => meter?.invoked?.(f, ms, busyMs),
        logged: (chunk) => {
          meter?.logged?.(f, chunk);
          logged(chunk);
        },
      },
    });
    // Lambda's own per-function metrics, whoever invokes (the API, a state machine, a schedule, another function).
    const invoke = fn.invoke.bind(fn);
    const flight: { count: number; drained?: () => void } = { count: 0 };
    inFlight.set(fn, flight);
    fn.invoke = async (event: unknown) => {
      const began = Date.now();
      flight.count += 1;
      try {
        const result = await invoke(event);
        cloudwatch.invoked(f.name, 'ok', Date.now() - began, began);
        return result;
      } catch (error) {
        const refused = error instanceof LambdaError && !error.functionError;
        cloudwatch.invoked(f.name, refused && error.name === 'TooManyRequestsException' ? 'throttled' : 'error', Date.now() - began, began);
        throw error;
      } finally {
        flight.count -= 1;
        if (flight.count === 0) flight.drained?.();
      }
    };
    return fn;
  };
  for (const f of model.functions) functions.set(f.arn, build(f));
  // Switched out by an update and still finishing their invocations: closed with the stack if not before.
  const retired = new Set<LambdaFunction>();
  started.push(async () => {
    await Promise.all([...functions.values(), ...retired].map((fn) => fn.close()));
  });
  progress(`starting ${PREWARMED} execution environments per function (bundles in ${dir}, logs in ${logDir})…`);
  await Promise.all([...functions.values()].map((fn) => fn.prewarm(1)));
  // The second ones start while the stack already serves: they compete for the CPU but delay nothing.
  void Promise.all([...functions.values()].map((fn) => fn.prewarm(PREWARMED)));
  progress(`functions ready; their AWS calls go through the IAM check at ${gateway.url}`);
  // Before anything is served, as CloudFormation creates them before the resources that depend on them (the
  // signing key's seed before the functions that sign).
  await createCustomResources({
    resources: model.customResources,
    stackId: stackIdOf(model),
    file: join(options.dataDir, 'custom-resources.json'),
    invoke: (arn, event) => functions.get(arn)?.invoke(event),
    log: progress,
  });

  serve = httpApi(model, functions, (line) => console.error(`api gateway: ${line}`), options.meter?.apiRequest);

  // The stack's own view, as an operator's: the API function's tables and state machine, straight to the
  // backends (not through the IAM check), for the restart sweep and for tests.
  const api =
    model.functions.find((f) => f.arn === model.routes[0]?.functionArn) ?? model.functions.find((f) => f.environment.STATE_MACHINE_ARN);
  if (!api) throw new Error('template mode: no function of the template has STATE_MACHINE_ARN in its environment');
  const { CONFIG_SECRET_ARN: _secret, APPROVAL_TOPIC_ARN: _links, NOTICES_TOPIC_ARN: _notices, ...own } = api.environment;
  // Its calls to `Tools` (the tools' description, a call's check) go through the gateway as the API function's
  // role would make them, under a key of the operator's own.
  const operatorKey = `ASIA${createHash('sha256').update(`${instance}/operator`).digest('hex').slice(0, 16).toUpperCase()}`;
  callers.set(operatorKey, { role: role(api.roleArn), session: 'operator' });
  Object.assign(process.env, {
    AWS_REGION: process.env.AWS_REGION ?? model.region,
    AWS_ACCESS_KEY_ID: operatorKey,
    AWS_SECRET_ACCESS_KEY: process.env.AWS_SECRET_ACCESS_KEY ?? 'local',
    AWS_ENDPOINT_URL_DYNAMODB: dynamoEndpoint,
    AWS_ENDPOINT_URL_SFN: sfnEndpoint,
    AWS_ENDPOINT_URL_LAMBDA: gateway.url,
    ...(s3Endpoint ? { AWS_ENDPOINT_URL_S3: s3Endpoint } : {}),
  });
  const deps = depsFromEnv(parseEnv({ ...own, TOOLRUNNER_CONFIG: options.configPath }), {
    abortSignalFor: engine.abortSignalFor,
    dynamoClient: options.dynamoClient,
  });
  const tables = Object.fromEntries(Object.entries(TABLE_ENV).map(([id, name]) => [id, api.environment[name]])) as TableNames;

  // No execution of this stack survives a restart (on AWS they would): on tables no other process uses, every
  // active operation is resumed now; on shared ones only those whose leases passed (StackOptions.ownsTables).
  const recovered = await sweep(deps, 1000, { ignoreLeases: options.ownsTables ?? !options.dynamoEndpoint });
  const stopping = new AbortController();
  started.push(async () => stopping.abort());
  for (const schedule of model.schedules) {
    if (!functions.has(schedule.targetArn)) continue;
    const mayInvoke = invokeAs({ role: role(schedule.roleArn), session: schedule.logicalId });
    const event = schedule.input ? JSON.parse(schedule.input) : {};
    const log = (line: string) => console.error(`schedule ${schedule.logicalId}: ${line}`);
    // The schedule invokes asynchronously and does not wait: Lambda queues the event, retries it by its own
    // policy (throttles included), and may deliver it twice.
    let queued = 0;
    const deliver = async () => {
      queued += 1;
      try {
        // The function as it is now: an update may have switched it since the schedule started.
        const target = functions.get(schedule.targetArn);
        if (!target) return;
        const outcome = await invokeAsync(() => target.invoke(event), stopping.signal, log);
        if (outcome.result !== 'ran' && !stopping.signal.aborted) cloudwatch.asyncDropped(target.spec.name);
        return outcome;
      } finally {
        queued -= 1;
      }
    };
    sweeperPart(
      async () => {
        // A test's shortened interval must not build a queue of events that AWS's one-minute rate never would.
        if (queued >= 2) return;
        const denied = await mayInvoke(schedule.targetArn);
        if (denied) throw new Error(`schedule ${schedule.logicalId}: ${denied}`);
        faults.deliverAgain(`schedule ${schedule.logicalId}`, deliver);
        void deliver();
      },
      options.sweepIntervalMs ?? schedule.everyMs,
      started,
    );
  }
  recordAwsActivity(join(logDir, 'aws.jsonl'), faults, account, started);
  progress(`API listening on ${apiUrl} (routes of the template)`);

  /**
   * Applies the cloud assembly as it is now over this running stack, as a CloudFormation update would: the
   * roles' policies first, then each changed function in the template's dependency order (independent ones
   * in a seeded random order), each switched once its new environments are warm, its old ones finishing the
   * invocations they have; then the changed state machines (running executions keep their definition) and
   * the routes. Tables, topics, schedules and alarms stay as the first assembly made them.
   */
  const redeploy = async (say: (line: string) => void): Promise<void> => {
    const next = readAssembly(await assemblyDir());
    const nextModel = bindStack(next, placement);
    if (options.toolsEntry) await useToolsModule(nextModel.functions, options.toolsEntry);
    const seed = options.deploySeed ?? randomInt(2 ** 31);
    const { changed, added, removed } = functionChanges(model.functions, nextModel.functions);
    const machines = machineChanges(model.machines, nextModel.machines);
    const secrets = regeneratedSecrets(assembly.template, next.template);
    say(
      `deploy: applying ${next.dir} (seed ${seed}): ${changed.length} functions changed, ${added.length} added, ${removed.length} removed, ${machines.length} state machines changed`,
    );
    const cfn = new Intrinsics(next.template.Resources, { ...nextModel, placement });
    for (const id of secrets) {
      if (!configSecrets.has(cfn.string({ Ref: id }, id))) continue;
      // The config secret's value is the local principals file: CloudFormation's new value replaces it.
      const value = generatedSecretValue(cfn.resolve(next.template.Resources[id].Properties, id) as Record<string, unknown>);
      writeFileSync(options.configPath, value, { mode: 0o600 });
      say(`deploy: ${id} regenerated (its GenerateSecretString changed; links, sessions and keys made with the old value stop working)`);
    }
    // Policies first: a switched function may need what only the new template grants it.
    model.roles.clear();
    for (const [arn, r] of nextModel.roles) model.roles.set(arn, r);
    for (const [key, caller] of callers) callers.set(key, { ...caller, role: nextModel.roles.get(caller.role.arn) ?? caller.role });
    for (const [arn, caller] of machineCallers)
      machineCallers.set(arn, { ...caller, role: nextModel.roles.get(caller.role.arn) ?? caller.role });
    model.resourcePolicies.clear();
    for (const [arn, d] of nextModel.resourcePolicies) model.resourcePolicies.set(arn, d);

    const byId = new Map(nextModel.functions.map((f) => [f.logicalId, f]));
    const gone = model.functions.filter((f) => removed.includes(f.logicalId));
    for (const id of updateOrder(next.template, [...added, ...changed], seeded(seed))) {
      const f = byId.get(id)!;
      const old = functions.get(f.arn);
      const oldProcess = processes.get(f.arn);
      const runtimeChanged = !oldProcess || model.functions.find((m) => m.arn === f.arn)?.runtime !== f.runtime;
      if (runtimeChanged) processes.set(f.arn, processOf(f));
      const fn = build(f);
      await fn.prewarm(1);
      functions.set(f.arn, fn);
      taskTargets[f.arn] ??= taskTarget(f.arn);
      if (old) retire(old, runtimeChanged ? oldProcess : undefined);
      say(`deploy: ${id} switched`);
    }
    for (const m of machines) {
      engine.define({ name: m.name, arn: m.arn, definition: m.definition, type: m.type });
      say(`deploy: ${m.logicalId} switched`);
    }
    model = { ...nextModel, roles: model.roles, resourcePolicies: model.resourcePolicies };
    assembly = next;
    serve = httpApi(model, functions, (line) => console.error(`api gateway: ${line}`), options.meter?.apiRequest);
    // Removed last, as CloudFormation deletes in its cleanup phase, once nothing new refers to them.
    for (const f of gone) {
      const fn = functions.get(f.arn);
      if (!fn) continue;
      functions.delete(f.arn);
      retire(fn, processes.get(f.arn));
      processes.delete(f.arn);
      say(`deploy: ${f.logicalId} deleted`);
    }
    say('deploy: done');
  };
  /** Closes a switched-out function (and the process it ran in, if no longer used) once its invocations end. */
  const retire = (fn: LambdaFunction, process?: FunctionProcess) => {
    retired.add(fn);
    const flight = inFlight.get(fn)!;
    const closed = new Promise<void>((done) => {
      if (flight.count === 0) done();
      else flight.drained = done;
    }).then(async () => {
      await fn.close();
      await process?.close();
      retired.delete(fn);
      inFlight.delete(fn);
    });
    void closed.catch((error: Error) => console.error(`deploy: closing a switched-out function failed: ${error.message}`));
  };
  if (options.onDeploy) {
    const say = options.onDeploy;
    // One update at a time, as CloudFormation runs one per stack: a SIGHUP during one applies after it.
    let deploying = Promise.resolve();
    const onSighup = () => {
      deploying = deploying.then(() =>
        // No rollback here (CloudFormation would roll back): what switched before the failure stays switched.
        redeploy(say).catch((error: Error) => say(`deploy: failed: ${error.message}`)),
      );
    };
    process.on('SIGHUP', onSighup);
    started.push(async () => {
      process.off('SIGHUP', onSighup);
      await deploying;
    });
  }

  return {
    apiUrl,
    sandboxUrl,
    deps,
    recovered,
    handlers: 'template',
    stateMachineArn: api.environment.STATE_MACHINE_ARN,
    tables,
    published: topics.published,
    alarms: cloudwatch,
    denials: gateway.denials,
    configSecretArn: api.environment.CONFIG_SECRET_ARN,
    awsFaults: faults,
    aws: { line: awsLine(account, faults), account },
    stop,
  };
}

/**
 * What the emulated AWS did, for operators and chaos runs: every 2 s (when it changed) one JSON line per
 * process with its cumulative counts (faults, throttles by function), so a SIGKILLed process's figures survive.
 */
function recordAwsActivity(file: string, faults: AwsFaults, account: AccountConcurrency, started: Started): void {
  let last = '';
  const write = () => {
    const counts = JSON.stringify({ ...faults.counts, throttles: account.throttlesByFunction() });
    if (counts === last) return;
    last = counts;
    appendFileSync(file, `${JSON.stringify({ at: new Date().toISOString(), pid: process.pid, ...JSON.parse(counts) })}\n`);
  };
  const timer = setInterval(write, 2_000);
  timer.unref();
  started.push(async () => {
    clearInterval(timer);
    write();
  });
}

/** Each function's `ReservedConcurrentExecutions` in the template, by logical id (functions without one absent). */
function reservationsOf(template: { Resources?: Record<string, { Type?: string; Properties?: Record<string, unknown> }> }) {
  return new Map(
    Object.entries(template.Resources ?? {}).flatMap(([id, r]) =>
      r.Type === 'AWS::Lambda::Function' && typeof r.Properties?.ReservedConcurrentExecutions === 'number'
        ? [[id, r.Properties.ReservedConcurrentExecutions as number] as const]
        : [],
    ),
  );
}

/** `concurrency <N>, faults <list or none>`: what `npm start` prints after `aws:` before `ready:`. */
export function awsLine(account: AccountConcurrency, faults: AwsFaults): string {
  const list = [...faults.enabled].join(', ');
  return `concurrency ${account.pool}, faults ${list ? `${list} (seed ${faults.seed})` : 'none'}`;
}

/** One synchronous invocation through Lambda's Invoke API: the function's result or error, or Lambda's refusal. */
async function invokeAsLambdaApi(fn: LambdaFunction, payload: Buffer): Promise<LambdaInvokeReply> {
  let event: unknown;
  try {
    event = JSON.parse(payload.toString('utf8') || 'null');
  } catch {
    return { ran: false, status: 400, type: 'InvalidRequestContentException', message: 'Could not parse request body into json' };
  }
  try {
    return { ran: true, payload: JSON.stringify((await fn.invoke(event)) ?? null) };
  } catch (error) {
    if (!(error instanceof LambdaError)) throw error;
    if (!error.functionError) {
      const status = error.name === 'RequestEntityTooLargeException' ? 413 : error.name === 'TooManyRequestsException' ? 429 : 500;
      return { ran: false, status, type: error.name, message: error.message };
    }
    return { ran: true, functionError: 'Unhandled', payload: JSON.stringify({ errorType: error.name, errorMessage: error.message }) };
  }
}

/** Points each function that bundles the tools module (by its construct name) at a bundle of `toolsEntry`. */
async function useToolsModule(functions: FunctionModel[], toolsEntry: string): Promise<void> {
  const find = (name: FunctionName) => functions.find((f) => new RegExp(`${name}Function[0-9A-F]{8}$`).test(f.logicalId));
  // As the construct bundles: with a Tools function, it alone gets the tools module.
  const isolated = find('Tools') !== undefined;
  for (const name of Object.keys(FUNCTIONS) as FunctionName[]) {
    if (!FUNCTIONS[name].tools) continue;
    const fn = find(name);
    if (fn) fn.codeDir = dirname(await lambdaBundle(name, { toolsEntry: toolsEntryFor(name, toolsEntry, isolated) }));
  }
}

/** Whether a function of the template calls the demo sandbox (its environment names SANDBOX_URL). */
function usesSandbox(template: { Resources: Record<string, { Type: string; Properties?: Record<string, unknown> }> }): boolean {
  return Object.values(template.Resources).some((r) => {
    const variables = (r.Properties?.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables;
    return r.Type === 'AWS::Lambda::Function' && variables !== undefined && 'SANDBOX_URL' in variables;
  });
}

/**
 * As the stack from sources prints them: each approver's link, published to the links topic (on AWS only the
 * approver's own subscription gets it), as `  for <approver>: <url>` on standard output.
 */
function printApprovalLink(message: { message: string; attributes: Record<string, string> }): void {
  if (message.attributes.type !== 'approval.requested' || !message.attributes.approverId) return;
  const url = message.message.trim().split('\n').at(-1)?.trim();
  if (url) process.stdout.write(`  for ${message.attributes.approverId}: ${url}\n`);
}

/** `TOOLRUNNER_ALARM_TIME_SCALE`: how many times faster than real time the alarms' periods pass (default 1). */
function alarmTimeScaleFromEnv(): number {
  const raw = process.env.TOOLRUNNER_ALARM_TIME_SCALE;
  const scale = raw === undefined ? 1 : Number(raw);
  if (!(scale >= 1)) throw new Error(`TOOLRUNNER_ALARM_TIME_SCALE must be a number of at least 1, not ${raw}`);
  return scale;
}
