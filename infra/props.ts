import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { RemovalPolicy } from 'aws-cdk-lib';
import type * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as secrets from 'aws-cdk-lib/aws-secretsmanager';
import type * as sns from 'aws-cdk-lib/aws-sns';
import { MAX_APPROVAL_TTL_SECONDS, withHashedKeys } from '../functions/core/config';
import { LONGEST_WAIT_SECONDS } from '../functions/http/wait';
import type { ToolRunnerOAuth } from './oauth';
// Types only (erased at run time): the props are declared, and documented, beside the construct.
import type { ToolRunnerApprover, ToolRunnerConcurrency, ToolRunnerProps, ToolRunnerThrottling } from './tool-runner';

/** The figures of `ToolRunnerConcurrency.RESERVED` (652 in all). */
export const RESERVED_CONCURRENCY: Required<ToolRunnerConcurrency> = { execute: 100, reconcile: 50, sweeper: 2, api: 500 };

/** `maxWaitingPolls` when the prop does not say otherwise and nothing is reserved. */
export const DEFAULT_MAX_WAITING_POLLS = 2;

/** The `$default` stage's throttling when the `throttling` prop does not say otherwise. */
export const DEFAULT_THROTTLING: ToolRunnerThrottling = { rateLimit: 50, burstLimit: 100 };

/** Below this longest wait at the API, nearly every caller that waits is answered by polling: the synth warns. */
export const SHORT_WAIT_WARNING_SECONDS = 2;

/** Step Functions' limit on a state machine's name. */
const STATE_MACHINE_NAME_MAX = 80;
export const STANDARD_SUFFIX = '-invocation';
export const EXPRESS_SUFFIX = '-express';
/** The longest base name either state machine's name leaves room for. */
export const BASE_NAME_MAX = STATE_MACHINE_NAME_MAX - `${STANDARD_SUFFIX}${EXPRESS_SUFFIX}`.length;

/** Lambda's memory range (MB). */
const MIN_MEMORY_MB = 128;
const MAX_MEMORY_MB = 10240;

/**
 * The longest a request waits at the API (at most 25 s, `functions/http/wait.ts`). By Little's law, requests
 * waiting at once = requests a second × seconds each waits, and the stage admits at most `rateLimit` a second.
 * With a ceiling (reserved concurrency) nothing else bounds the waits: ceiling / rate keeps them within it. With
 * waiting slots the slots hold the bound themselves (a request that finds none is answered at once, it does not
 * queue), so the wait only has to be long enough for the slots, not the stage, to be what bounds: see
 * `idleWaitsAtMost`. Beyond that a longer wait means fewer polls for the same answer, so it is the longest.
 */
export function longestWaitSeconds(apiCeiling: number | undefined, rateLimit: number): number {
  if (apiCeiling === undefined) return LONGEST_WAIT_SECONDS;
  return Math.min(LONGEST_WAIT_SECONDS, Math.floor(apiCeiling / rateLimit));
}

/**
 * Idle waits at once the API can actually reach with `maxWaitingPolls` slots, waits of `longestWait` and the
 * stage's rate: the slots, or what the rate can keep waiting (rate × wait, each holder asking again as its wait
 * ends), whichever is fewer. Fewer than the slots means the stage's rate, not the bound, limits them.
 */
export function idleWaitsAtMost(maxWaitingPolls: number, rateLimit: number, longestWait: number): number {
  return Math.min(maxWaitingPolls, Math.floor(rateLimit * longestWait));
}

/** esbuild's target for a Node.js Lambda runtime (`nodejs24.x` → `node24`); refuses anything else. */
export function bundleTargetOf(runtime: lambda.Runtime): string {
  const major = Number(runtime.name.match(/^nodejs(\d+)\.x$/)?.[1]);
  if (!(major >= 22)) throw new Error(`ToolRunner: runtime ${runtime.name} is not a Node.js runtime of version 22 or newer`);
  return `node${major}`;
}

/** A synth warning about the props, added to the construct once it exists. */
export interface PropsWarning {
  readonly id: string;
  readonly message: string;
}

/** What the construct builds from: every prop checked and every default filled in, before any resource exists. */
export interface ResolvedToolRunnerProps {
  readonly removalPolicy: RemovalPolicy;
  readonly xrayTracing: boolean;
  readonly logRetention: logs.RetentionDays;
  /** The user's secret (its `approvalSecret` signs); without it, the construct creates the document and a signing key. */
  readonly configSecret?: secrets.ISecret;
  /**
   * The principals document the construct owns and writes whole on every deploy (the `principals` prop, keys
   * hashed); none: the construct creates the document once and the operator owns it.
   */
  readonly ownedPrincipals?: { readonly principals: unknown[] };
  /** The `approvalTtlSeconds` prop: it reaches the functions as a variable and wins over the document's. */
  readonly approvalTtlSeconds?: number;
  readonly apiMemoryMb: number;
  readonly toolMemoryMb: number;
  readonly runtime: lambda.Runtime;
  /** esbuild's target for `runtime`. */
  readonly bundleTarget: string;
  readonly throttling: ToolRunnerThrottling;
  /** Every figure reserved (the preset's where the prop leaves one out), or none. */
  readonly reserved?: Required<ToolRunnerConcurrency>;
  /** The bound on idle waits at the API, or none (with reservations, unless the prop sets one). */
  readonly maxWaitingPolls?: number;
  /** The API's longest wait (s), `TOOLRUNNER_MAX_WAIT_SECONDS`. */
  readonly longestWait: number;
  readonly blobRetentionDays: number;
  readonly approvers: readonly ToolRunnerApprover[];
  /** The user's prefix; without it the construct derives one from its path. */
  readonly stateMachineNamePrefix?: string;
  /** The policies file's absolute path, if any. */
  readonly policiesFile?: string;
  /** The tools module's absolute path: esbuild resolves an alias target from the directory it runs in. */
  readonly toolsEntry: string;
  readonly toolsEnvironment?: Readonly<Record<string, string>>;
  /** Whether tool code runs in the `Tools` function (`toolIsolation: "function"`). */
  readonly isolated: boolean;
  readonly toolPolicies: readonly iam.PolicyStatement[];
  /** The user's prefix; without it the alarms take the state machines' base name. */
  readonly alarmNamePrefix?: string;
  readonly alarmTopic?: sns.ITopic;
  readonly alarmEmails: readonly string[];
  readonly actionsEnabled: boolean;
  readonly oauth?: ToolRunnerOAuth;
  readonly cognitoDomainPrefix?: string;
  readonly publicBaseUrl?: string;
  /** Warnings the synth shows, in the order they are added. */
  readonly warnings: readonly PropsWarning[];
}

/** The `principals` prop as the secret holds them: validated as the runner reads them, every `key` as its SHA-256. */
function hashedPrincipals(principals: readonly unknown[]): unknown[] {
  try {
    return (withHashedKeys({ principals, approvalSecret: 'x'.repeat(32) }) as { principals: unknown[] }).principals;
  } catch (error) {
    throw new Error(`ToolRunner: principals: ${(error as Error).message}`, { cause: error });
  }
}

function checkMemory(name: 'apiMemoryMb' | 'toolMemoryMb', mb: number): void {
  if (!Number.isInteger(mb) || mb < MIN_MEMORY_MB || mb > MAX_MEMORY_MB)
    throw new Error(`ToolRunner: ${name} must be an integer from ${MIN_MEMORY_MB} to ${MAX_MEMORY_MB} (Lambda's range)`);
}

function checkApprovalTtl(props: ToolRunnerProps): void {
  if (props.approvalTtlSeconds === undefined) return;
  if (props.configSecret)
    throw new Error('ToolRunner: approvalTtlSeconds applies to the secret it creates; with configSecret, set it in that document');
  if (!Number.isInteger(props.approvalTtlSeconds) || props.approvalTtlSeconds < 1 || props.approvalTtlSeconds > MAX_APPROVAL_TTL_SECONDS)
    throw new Error(
      `ToolRunner: approvalTtlSeconds must be an integer from 1 to ${MAX_APPROVAL_TTL_SECONDS} (the state machine must outlive the wait)`,
    );
}

/** One approver: a principal id, and exactly one of an email address and a subscription. */
function checkApprover(approver: ToolRunnerApprover, index: number): void {
  if (!approver.id || approver.id.length > 256)
    throw new Error(`ToolRunner: approvers[${index}].id must be a principal id (1 to 256 characters)`);
  if (Boolean(approver.email) === Boolean(approver.subscription))
    throw new Error(`ToolRunner: approvers[${index}] (${approver.id}) needs exactly one of email and subscription`);
}

/** Waits the stage's rate or the API's ceiling keep from working as the props mean them. */
function waitWarnings(
  maxWaitingPolls: number | undefined,
  throttling: ToolRunnerThrottling,
  longestWait: number,
  apiCeiling: number | undefined,
): PropsWarning[] {
  const warnings: PropsWarning[] = [];
  if (maxWaitingPolls !== undefined && idleWaitsAtMost(maxWaitingPolls, throttling.rateLimit, longestWait) < maxWaitingPolls)
    warnings.push({
      id: 'toolrunner:waiting-polls-over-rate',
      message: `ToolRunner: maxWaitingPolls is ${maxWaitingPolls}, but the stage's rate limit of ${throttling.rateLimit} a second keeps at most ${idleWaitsAtMost(maxWaitingPolls, throttling.rateLimit, longestWait)} requests waiting ${longestWait} s at once: the rate, not the bound, limits the waits. Lower maxWaitingPolls or raise throttling.rateLimit.`,
    });
  if (longestWait < SHORT_WAIT_WARNING_SECONDS)
    warnings.push({
      id: 'toolrunner:short-longest-wait',
      message: `ToolRunner: the API's longest wait is ${longestWait} s (its ceiling of ${apiCeiling} over the stage's rate limit of ${throttling.rateLimit} a second): a call whose caller waits cannot be answered within it, so it runs on the dearer Express path and the caller polls. Raise concurrency.api, or lower throttling.rateLimit, to keep it at ${SHORT_WAIT_WARNING_SECONDS} s or more.`,
    });
  return warnings;
}

/**
 * The props checked, in one place, before the construct builds anything: a bad prop throws here and leaves no
 * half-built construct in the user's tree. The checks run in a fixed order, so of several bad props the same
 * one is always named. Only what needs a built resource is checked later: each function's environment size
 * (its tokens resolve at synth), and `grantSecretToTools`' argument.
 */
export function resolveToolRunnerProps(props: ToolRunnerProps): ResolvedToolRunnerProps {
  checkApprovalTtl(props);
  if (props.principals && props.configSecret)
    throw new Error('ToolRunner: principals are written into the secret it creates; with configSecret, put them in that document');
  const apiMemoryMb = props.apiMemoryMb ?? 256;
  const toolMemoryMb = props.toolMemoryMb ?? 128;
  checkMemory('toolMemoryMb', toolMemoryMb);
  const runtime = props.runtime ?? lambda.Runtime.NODEJS_24_X;
  const bundleTarget = bundleTargetOf(runtime);
  checkMemory('apiMemoryMb', apiMemoryMb);
  const throttling = props.throttling ?? DEFAULT_THROTTLING;
  const reserved = props.concurrency ? { ...RESERVED_CONCURRENCY, ...props.concurrency } : undefined;
  for (const [name, n] of Object.entries(reserved ?? {}))
    if (!Number.isInteger(n) || n < 1) throw new Error(`ToolRunner: concurrency.${name} must be a positive integer`);
  const maxWaitingPolls = props.maxWaitingPolls ?? (reserved ? undefined : DEFAULT_MAX_WAITING_POLLS);
  if (maxWaitingPolls !== undefined && (!Number.isInteger(maxWaitingPolls) || maxWaitingPolls < 0 || maxWaitingPolls > 1000))
    throw new Error('ToolRunner: maxWaitingPolls must be an integer from 0 to 1000');
  if (!(throttling.rateLimit > 0)) throw new Error('ToolRunner: throttling.rateLimit must be positive');
  // With reservations, the API's ceiling bounds the instances its waits hold; without, the waiting slots do:
  // at most maxWaitingPolls idle whatever the wait, so it is as long as API Gateway allows (longestWaitSeconds).
  const longestWait = longestWaitSeconds(reserved?.api, throttling.rateLimit);
  const warnings = waitWarnings(maxWaitingPolls, throttling, longestWait, reserved?.api);
  const blobRetentionDays = props.blobRetentionDays ?? 31;
  if (!Number.isInteger(blobRetentionDays) || blobRetentionDays < 1)
    throw new Error('ToolRunner: blobRetentionDays must be a positive integer');
  const ownedPrincipals = props.principals ? { principals: hashedPrincipals(props.principals) } : undefined;
  const approvers = props.approvers ?? [];
  approvers.forEach(checkApprover);
  const { stateMachineNamePrefix } = props;
  if (stateMachineNamePrefix !== undefined && !new RegExp(`^[A-Za-z0-9_-]{1,${BASE_NAME_MAX}}$`).test(stateMachineNamePrefix))
    throw new Error(`ToolRunner: stateMachineNamePrefix must be 1 to ${BASE_NAME_MAX} letters, digits, - or _`);
  const policiesFile = props.policiesFile && resolve(props.policiesFile);
  if (policiesFile && !existsSync(policiesFile)) throw new Error(`ToolRunner: policiesFile ${policiesFile} does not exist`);
  const toolsEntry = resolve(props.tools.entry);
  if (!existsSync(toolsEntry)) throw new Error(`ToolRunner: tools.entry ${toolsEntry} does not exist`);
  const toolIsolation = props.toolIsolation ?? 'function';
  if (toolIsolation !== 'function' && toolIsolation !== 'none') throw new Error('ToolRunner: toolIsolation must be "function" or "none"');
  // A derived prefix (the state machines' base name) always passes: letters, digits, - and _, at most 61.
  if (props.alarmNamePrefix !== undefined && !/^[A-Za-z0-9_.-]{1,200}$/.test(props.alarmNamePrefix))
    throw new Error('ToolRunner: alarmNamePrefix must be 1 to 200 letters, digits, ".", "_" or "-"');
  if (!props.alarmTopic && !props.alarmEmails?.length)
    warnings.push({
      id: 'toolrunner:alarms-reach-nobody',
      message:
        'ToolRunner: no alarmTopic and no alarmEmails: the Critical alarms publish to a topic nobody subscribes to. Give alarmEmails, or an alarmTopic your paging subscribes to (docs/deploy.md, "Alarms and dashboard").',
    });
  return {
    removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE,
    xrayTracing: props.xrayTracing ?? false,
    logRetention: props.logRetention ?? logs.RetentionDays.ONE_MONTH,
    configSecret: props.configSecret,
    ownedPrincipals,
    approvalTtlSeconds: props.approvalTtlSeconds,
    apiMemoryMb,
    toolMemoryMb,
    runtime,
    bundleTarget,
    throttling,
    reserved,
    maxWaitingPolls,
    longestWait,
    blobRetentionDays,
    approvers,
    stateMachineNamePrefix,
    policiesFile: policiesFile || undefined,
    toolsEntry,
    toolsEnvironment: props.tools.environment,
    isolated: toolIsolation === 'function',
    toolPolicies: props.toolPolicies ?? [],
    alarmNamePrefix: props.alarmNamePrefix,
    alarmTopic: props.alarmTopic,
    alarmEmails: props.alarmEmails ?? [],
    actionsEnabled: props.actionsEnabled ?? true,
    oauth: props.oauth,
    cognitoDomainPrefix: props.cognitoDomainPrefix,
    publicBaseUrl: props.publicBaseUrl,
    warnings,
  };
}
