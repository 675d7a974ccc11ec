import { z } from 'zod';
import { DEFAULT_BACKOFF, type BackoffPolicy } from './backoff';
import type { Risk } from './model';

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
}

/** A status lookup's answer: the upstream did or did not perform the operation with this key. */
export type ReconcileResult<O> = { found: true; result: O } | { found: false };

export type ApprovalPolicy<I> = 'never' | 'always' | ((input: I) => boolean);

/** A tool and its whole policy, registered once. */
export interface ToolSpec<I = any, O = any> {
  name: string;
  description: string;
  inputSchema: z.ZodType<I>;
  outputSchema: z.ZodType<O>;
  risk: Risk;
  timeoutMs: number;
  maxAttempts: number;
  supportsIdempotency: boolean;
  /** Whole seconds the operation may take from validation to its last attempt. */
  deadlineSeconds?: number;
  backoff?: BackoffPolicy;
  reconcile?: (ctx: ToolContext, input: I) => Promise<ReconcileResult<O>>;
  lockKey?: (input: I) => string;
  costCents?: (input: I) => number;
  approval: ApprovalPolicy<I>;
  execute: (ctx: ToolContext, input: I) => Promise<O>;
}

export class ToolRegistrationError extends Error {
  override name = 'ToolRegistrationError';
}

const NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** Refuses a tool whose policy could repeat a side effect or that cannot be described to a model. */
export function checkToolSpec(spec: ToolSpec): void {
  if (!NAME.test(spec.name)) throw new ToolRegistrationError(`tool name ${spec.name} must match ${NAME}`);
  if (!Number.isInteger(spec.maxAttempts) || spec.maxAttempts < 1) {
    throw new ToolRegistrationError(`${spec.name}: maxAttempts must be a positive integer`);
  }
  if (!(spec.timeoutMs > 0)) throw new ToolRegistrationError(`${spec.name}: timeoutMs must be positive`);
  if (spec.risk === 'irreversible_write' && !spec.supportsIdempotency && !spec.reconcile && spec.maxAttempts !== 1) {
    throw new ToolRegistrationError(
      `${spec.name}: an irreversible write without idempotency support or a reconcile function must declare maxAttempts: 1`,
    );
  }
  if (!(spec.inputSchema instanceof z.ZodObject)) {
    throw new ToolRegistrationError(`${spec.name}: inputSchema must be a zod object`);
  }
}

export function backoffOf(spec: ToolSpec): BackoffPolicy {
  return spec.backoff ?? DEFAULT_BACKOFF;
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

export type ToolFormat = 'neutral' | 'openai' | 'anthropic' | 'mcp';

/** Tool definitions in each provider's shape, from the one zod schema. */
export function describeTools(registry: ToolRegistry, format: ToolFormat): unknown[] {
  return [...registry.values()].map((spec) => {
    const parameters = z.toJSONSchema(spec.inputSchema, { target: 'draft-2020-12' });
    switch (format) {
      case 'openai':
        return { type: 'function', function: { name: spec.name, description: spec.description, parameters, strict: true } };
      case 'anthropic':
        return { name: spec.name, description: spec.description, input_schema: parameters };
      case 'mcp':
        return { name: spec.name, description: spec.description, inputSchema: parameters };
      case 'neutral':
        return {
          name: spec.name,
          description: spec.description,
          inputSchema: parameters,
          outputSchema: z.toJSONSchema(spec.outputSchema, { target: 'draft-2020-12' }),
          risk: spec.risk,
          maxAttempts: spec.maxAttempts,
          supportsIdempotency: spec.supportsIdempotency,
          reconcilable: Boolean(spec.reconcile),
          approval: typeof spec.approval === 'function' ? 'conditional' : spec.approval,
        };
    }
  });
}
