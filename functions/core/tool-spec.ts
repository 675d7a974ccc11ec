import type { z } from 'zod';
import { DEFAULT_BACKOFF, type BackoffPolicy } from './backoff';
import type { Risk } from './model';
import { RESULT_LIMITS } from './result-record';
import { SHAPES, type ToolFormat } from './provider-shapes';
import { RunnerError } from './errors';

/** What a tool's code sees of the lifecycle on each attempt. */
export interface ToolContext {
  /** Same value on every attempt and reconciliation of one logical operation. */
  idempotencyKey: string;
  attempt: number;
  /** Epoch milliseconds after which the attempt is abandoned. */
  deadline: number;
  signal: AbortSignal;
  /** The tool's transport reports the upstream HTTP status here, for the trace. */
  onUpstreamStatus(status: number): void;
  /**
   * The WHATWG `fetch` to reach the upstream with (`requestJson` uses it): the runner's injected faults,
   * recorded cassettes and `toolrunner verify` see only what passes through it, so hand it to SDK clients
   * too (docs/tools.md). Outside those it is the global `fetch`.
   */
  fetch: typeof globalThis.fetch;
}

/** What `toolrunner verify` needs to check a tool's promises against its upstream (docs/testing.md). */
export interface ToolVerify<I> {
  /** Sample inputs, used when the cases file has none for this tool. */
  cases?: { name?: string; input: I }[];
  /**
   * How many effects the upstream holds for this input now (charges, sent emails…): verify reads it before
   * and after each case, so it can see two effects where `reconcile` would only say "found".
   */
  effects?: (input: I) => Promise<number>;
}

/** A status lookup's answer: the upstream did or did not perform the operation with this key. */
export type ReconcileResult<O> = { found: true; result: O } | { found: false };

/** When a call needs a person's approval: never, always, or when the predicate says so for the frozen input. */
export type ApprovalPolicy<I> = 'never' | 'always' | ((input: I) => boolean);

/** A tool and its whole policy, registered once (the README's "Registering a tool"). */
// biome-ignore lint/suspicious/noExplicitAny: a registry holds specs of every input and output type; `unknown` would make them unassignable.
export interface ToolSpec<I = any, O = any> {
  name: string;
  description: string;
  inputSchema: z.ZodType<I>;
  outputSchema: z.ZodType<O>;
  risk: Risk;
  timeoutMs: number;
  maxAttempts: number;
  supportsIdempotency: boolean;
  /**
   * The most bytes of result (canonical JSON) the envelope carries: above it the model gets
   * `result_omitted: { bytes, sha256 }` instead (the whole result is still recorded, up to 5 MiB).
   * At most 4 MiB, so an envelope fits Lambda's 6 MB response.
   * @default 262144 (256 KiB)
   */
  maxResultBytes?: number;
  /** Whole seconds the operation may take from validation to its last attempt. */
  deadlineSeconds?: number;
  backoff?: BackoffPolicy;
  /** Looks the effect of an unanswered attempt up at the upstream (by `ctx.idempotencyKey`): found, not found, or unknown. */
  reconcile?: (ctx: ToolContext, input: I) => Promise<ReconcileResult<O>>;
  /** Calls with the same lock key run one at a time (for example one order's address). */
  lockKey?: (input: I) => string;
  /** What the call counts against the run's spend budget, in cents. */
  costCents?: (input: I) => number;
  approval: ApprovalPolicy<I>;
  /**
   * Lines a person reads on the approval page, in their terms (an amount with its currency rather than
   * raw cents). Optional; the exact arguments are always shown as well.
   */
  describeForApproval?: (input: I) => string[];
  /**
   * Argument fields a person deciding an approval must not read (passwords, tokens): every surface that shows
   * the arguments masks them whole. Paths as the approval view names fields: `password`, `card.cvc`,
   * `items[].pin` for every item, `items[0].pin` for one. Card-like numbers are masked anyway.
   */
  secretFields?: string[];
  /**
   * MCP client capabilities a caller over MCP revision 2026-07-28 must declare in its request to call this tool
   * (e.g. `{ elicitation: {} }` for a tool whose result asks the user something). A request without one is
   * refused before anything runs (`-32021`, naming what is missing). Other callers are not affected.
   */
  mcpClientCapabilities?: Record<string, Record<string, unknown>>;
  /** Sample inputs and an effect count for `toolrunner verify`; the runner itself never reads this. */
  verify?: ToolVerify<I>;
  /** Performs the call once: send `ctx.idempotencyKey` upstream where the API takes one, and honour `ctx.signal`. */
  execute: (ctx: ToolContext, input: I) => Promise<O>;
}

export class ToolRegistrationError extends RunnerError {
  override name = 'ToolRegistrationError';
}

const NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * How long the functions that run tool code may run (infra/functions.ts takes them from here): Execute runs
 * `execute`, Reconcile runs `reconcile`. A first attempt runs in the API only when its caller waits longer
 * than the tool's timeout (commands/submit.ts), so the API's limit bounds no tool.
 */
export const TOOL_FUNCTION_TIMEOUT_SECONDS = { execute: 300, reconcile: 120 } as const;
/** What a step needs besides the tool's own time: its reads and writes, and the runner's grace after a timeout. */
const STEP_MARGIN_MS = 10_000;
/** The longest `timeoutMs` a function can wait for, with its step's own work. */
export const MAX_TOOL_TIMEOUT_MS = {
  execute: TOOL_FUNCTION_TIMEOUT_SECONDS.execute * 1000 - STEP_MARGIN_MS,
  reconcile: TOOL_FUNCTION_TIMEOUT_SECONDS.reconcile * 1000 - STEP_MARGIN_MS,
} as const;

/** Refuses a tool whose policy could repeat a side effect or that cannot be described to a model. */
export function checkToolSpec(spec: ToolSpec): void {
  if (!NAME.test(spec.name)) throw new ToolRegistrationError(`tool name ${spec.name} must match ${NAME}`);
  if (!Number.isInteger(spec.maxAttempts) || spec.maxAttempts < 1) {
    throw new ToolRegistrationError(`${spec.name}: maxAttempts must be a positive integer`);
  }
  if (!(spec.timeoutMs > 0)) throw new ToolRegistrationError(`${spec.name}: timeoutMs must be positive`);
  if (spec.timeoutMs > MAX_TOOL_TIMEOUT_MS.execute)
    throw new ToolRegistrationError(
      `${spec.name}: timeoutMs ${spec.timeoutMs} is longer than the Execute function can wait for a tool (${MAX_TOOL_TIMEOUT_MS.execute} ms)`,
    );
  if (spec.reconcile && spec.timeoutMs > MAX_TOOL_TIMEOUT_MS.reconcile)
    throw new ToolRegistrationError(
      `${spec.name}: timeoutMs ${spec.timeoutMs} is longer than the Reconcile function can wait for its reconcile lookup (${MAX_TOOL_TIMEOUT_MS.reconcile} ms)`,
    );
  if (
    spec.maxResultBytes !== undefined &&
    !(Number.isInteger(spec.maxResultBytes) && spec.maxResultBytes >= 1 && spec.maxResultBytes <= RESULT_LIMITS.maxMaxResultBytes)
  ) {
    throw new ToolRegistrationError(`${spec.name}: maxResultBytes must be an integer from 1 to ${RESULT_LIMITS.maxMaxResultBytes} (4 MiB)`);
  }
  if (spec.risk === 'irreversible_write' && !spec.supportsIdempotency && !spec.reconcile && spec.maxAttempts !== 1) {
    throw new ToolRegistrationError(
      `${spec.name}: an irreversible write without idempotency support or a reconcile function must declare maxAttempts: 1`,
    );
  }
  if (!isZodObject(spec.inputSchema)) {
    throw new ToolRegistrationError(`${spec.name}: inputSchema must be a zod object`);
  }
  if (!isZodSchema(spec.outputSchema)) throw new ToolRegistrationError(`${spec.name}: outputSchema must be a zod schema`);
  if (typeof spec.execute !== 'function') throw new ToolRegistrationError(`${spec.name}: execute must be a function`);
  if (spec.secretFields !== undefined) checkSecretFields(spec);
}

/** A field path of the approval view (core/approval-view.ts): keys joined by dots, each with `[]` or `[n]` after it. */
const FIELD_PATH = /^[^.[\]]+(?:\[\d*\])*(?:\.[^.[\]]+(?:\[\d*\])*)*$/;
const MAX_SECRET_FIELDS = 100;

/** A path that names no field masks nothing: a typo would show the secret it meant to hide. */
function checkSecretFields(spec: ToolSpec): void {
  const paths: unknown = spec.secretFields;
  if (!Array.isArray(paths)) throw new ToolRegistrationError(`${spec.name}: secretFields must be a list of field paths`);
  if (paths.length > MAX_SECRET_FIELDS)
    throw new ToolRegistrationError(`${spec.name}: secretFields holds at most ${MAX_SECRET_FIELDS} paths`);
  const def = (spec.inputSchema as unknown as { _zod: { def: { shape?: Record<string, unknown>; catchall?: unknown } } })._zod.def;
  const keys = def.shape ? Object.keys(def.shape) : [];
  const seen = new Set<string>();
  for (const [i, path] of paths.entries()) {
    if (typeof path !== 'string' || path.length > 256 || !FIELD_PATH.test(path))
      throw new ToolRegistrationError(`${spec.name}: secretFields[${i}] ${JSON.stringify(path)} is not a field path`);
    if (seen.has(path)) throw new ToolRegistrationError(`${spec.name}: secretFields[${i}] "${path}" is listed twice`);
    seen.add(path);
    const top = path.split(/[.[]/, 1)[0];
    if (def.catchall === undefined && !keys.includes(top))
      throw new ToolRegistrationError(`${spec.name}: secretFields[${i}] "${path}" names no field of the input schema (${keys.join(', ')})`);
  }
}

/**
 * Structural, not `instanceof`: a user's tools module may bring its own copy of zod 4, whose classes are
 * not the runner's. Every zod 4 schema carries its definition under `_zod.def`.
 */
function isZodObject(schema: unknown): boolean {
  return isZodSchema(schema) && (schema as { _zod: { def: { type?: unknown } } })._zod.def.type === 'object';
}

function isZodSchema(schema: unknown): boolean {
  const internals = (schema as { _zod?: { def?: unknown } } | null)?._zod;
  return (
    typeof internals?.def === 'object' && internals.def !== null && typeof (schema as { safeParse?: unknown }).safeParse === 'function'
  );
}

/**
 * Declares a tool and checks its policy at once, so a mistake fails where the tool is written rather than
 * when the runner starts. The registry checks every tool again (`makeRegistry`).
 */
export function defineTool<I, O>(spec: ToolSpec<I, O>): ToolSpec<I, O> {
  checkToolSpec(spec as ToolSpec);
  return spec;
}

export function backoffOf(spec: ToolSpec): BackoffPolicy {
  return spec.backoff ?? DEFAULT_BACKOFF;
}

export function maxResultBytesOf(spec: Pick<ToolSpec, 'maxResultBytes'>): number {
  return spec.maxResultBytes ?? RESULT_LIMITS.defaultMaxResultBytes;
}

export function deadlineSecondsOf(spec: ToolSpec): number {
  return spec.deadlineSeconds ?? Math.ceil((spec.maxAttempts * spec.timeoutMs) / 1000) + 120;
}

export function needsApproval<I>(spec: ToolSpec<I>, input: I): boolean {
  if (spec.approval === 'never') return false;
  if (spec.approval === 'always') return true;
  return spec.approval(input);
}

export type ToolRegistry = ReadonlyMap<string, ToolSpec>;

export function makeRegistry(specs: ToolSpec[]): ToolRegistry {
  const map = new Map<string, ToolSpec>();
  for (const spec of specs) {
    checkToolSpec(spec);
    if (map.has(spec.name)) throw new ToolRegistrationError(`tool ${spec.name} registered twice`);
    map.set(spec.name, spec);
  }
  return map;
}

/** Waits for a live registry's tools (described by `Tools`, or an MCP upstream's); a plain registry is always ready. */
export async function toolsReady(registry: ToolRegistry): Promise<void> {
  await (registry as { refresh?: () => Promise<void> }).refresh?.();
}

export type { ToolFormat } from './provider-shapes';

/** Tool definitions in one provider's shape (see provider-shapes.ts), from the one zod schema. */
export function describeTools(registry: ToolRegistry, format: ToolFormat): unknown[] {
  return [...registry.values()].map(SHAPES[format]);
}
