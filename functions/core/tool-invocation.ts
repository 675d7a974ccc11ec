import { z } from 'zod';
import { MalformedAnswerError } from './errors';
import { measureSerialized, RESULT_LIMITS, serializeBounded } from './result-record';
import type { ToolSpec } from './tool-spec';

/**
 * What crosses between the runner's functions and the `Tools` function, which runs tool code without the
 * runner's privileges: one `execute` or `reconcile` of one tool, and its answer. Both sides are JSON (a Lambda
 * payload), so a thrown error crosses as its name, message and primitive fields, which is all the classifier
 * reads (errors are recognized by name and shape, see errors.ts).
 */
export const ToolInvocationSchema = z
  .object({
    action: z.enum(['execute', 'reconcile']),
    tool: z.string().min(1).max(64),
    /** The frozen arguments as recorded (canonical JSON): the Tools function parses them with the tool's schema. */
    arguments: z.string(),
    operationId: z.string().min(1),
    idempotencyKey: z.string().min(1),
    attempt: z.number().int().nonnegative(),
    timeoutMs: z.number().int().positive(),
  })
  .strict();
export type ToolInvocation = z.infer<typeof ToolInvocationSchema>;

const Primitive = z.union([z.string(), z.number(), z.boolean(), z.null()]);

export const CrossedErrorSchema = z.object({
  name: z.string(),
  message: z.string(),
  fields: z.record(z.string(), Primitive),
});
export type CrossedError = z.infer<typeof CrossedErrorSchema>;

/** Why the `Tools` function refused an invocation before any tool code ran. */
export const RefusalReasonSchema = z.enum(['invalid_invocation', 'unknown_tool', 'no_reconcile', 'invalid_arguments']);
export type RefusalReason = z.infer<typeof RefusalReasonSchema>;

/** The size and hash of a result too large to carry whole (the record's `{ bytes, sha256 }`). */
export const OmittedResultSchema = z.object({ bytes: z.number().int().positive(), sha256: z.string().regex(/^sha256:[0-9a-f]{64}$/) });

// Tried in order: an answer with `result_omitted` or `refused` is never read as one with a value or an error.
export const ToolAnswerSchema = z.union([
  z.object({ ok: z.literal(true), result_omitted: OmittedResultSchema, upstreamStatus: z.number().int().optional() }),
  z.object({ ok: z.literal(true), value: z.unknown(), upstreamStatus: z.number().int().optional() }),
  /** Refused before any tool code ran (the caller's and this function's tools differ): nothing was sent anywhere. */
  z.object({ ok: z.literal(false), refused: z.object({ reason: RefusalReasonSchema, message: z.string() }) }),
  z.object({ ok: z.literal(false), error: CrossedErrorSchema, upstreamStatus: z.number().int().optional() }),
]);
export type ToolAnswer = z.infer<typeof ToolAnswerSchema>;

/**
 * The most bytes of canonical JSON a result of the `Tools` function is measured to (size and hash) when it is
 * too large to carry: far above what the runner records, so an oversized result is told by its hash.
 */
export const MEASURED_RESULT_BYTES = 64 * 1024 * 1024;

/**
 * What the `Tools` function answers for a value its tool returned: the value whole up to the 5 MiB the runner
 * records (as canonical JSON, so what crosses is what was measured, within Lambda's 6 MB response), its
 * `{ bytes, sha256 }` above that, and a `MalformedAnswerError` (the caller's `invalid_output`) for a value
 * JSON cannot carry. Without this an oversized result failed the function as a whole: "may have acted".
 */
export function answerOfValue(value: unknown, upstreamStatus: number | undefined): ToolAnswer {
  const whole = serializeBounded(value, RESULT_LIMITS.maxRecordedBytes);
  if (whole.ok) return { ok: true, value: JSON.parse(whole.json), upstreamStatus };
  const measured = measureSerialized(value, MEASURED_RESULT_BYTES);
  if (measured.ok && measured.bytes > RESULT_LIMITS.maxRecordedBytes)
    return { ok: true, result_omitted: { bytes: measured.bytes, sha256: measured.sha256 }, upstreamStatus };
  const message = measured.ok ? whole.message : measured.message;
  return { ok: false, error: crossError(new MalformedAnswerError(message)), upstreamStatus };
}

/** A refusal before any tool code ran. */
export function refusal(reason: RefusalReason, message: string): ToolAnswer {
  return { ok: false, refused: { reason, message } };
}

/** Fields an error carries that never cross: the stack (it stays in the Tools function's log) and causes. */
const KEPT_BACK = new Set(['name', 'message', 'stack', 'cause']);

/** An error as it crosses: name, message and its own primitive fields (status, code, reason, requestSent…). */
export function crossError(thrown: unknown): CrossedError {
  const error = thrown instanceof Error ? thrown : new Error(String(thrown));
  const fields: CrossedError['fields'] = {};
  for (const [key, value] of Object.entries(error)) {
    if (KEPT_BACK.has(key)) continue;
    if (value === null || ['string', 'number', 'boolean'].includes(typeof value)) fields[key] = value as string | number | boolean | null;
  }
  return { name: error.name || 'Error', message: error.message, fields };
}

/** The error on the caller's side: the same name, message and fields, so the classifier sees what the tool threw. */
export function restoreError(crossed: CrossedError): Error {
  const error = new Error(crossed.message);
  Object.assign(error, crossed.fields);
  Object.defineProperty(error, 'name', { value: crossed.name, enumerable: false, writable: true, configurable: true });
  return error;
}

/**
 * The other questions the runner's functions put to `Tools`, whose module they never load: the tools' static
 * description (once per process) and, once per call at validation, what the tool's own code says of its
 * arguments (`checkArguments`: parsed arguments, cost, approval, lock key, approval lines).
 */
export const ToolsQuestionSchema = z.discriminatedUnion('action', [
  z.object({ action: z.literal('describe') }).strict(),
  z.object({ action: z.literal('check'), tool: z.string().min(1).max(64), arguments: z.string() }).strict(),
]);
export type ToolsQuestion = z.infer<typeof ToolsQuestionSchema>;

const JsonSchemaObject = z.record(z.string(), z.unknown());

/** One tool as the runner's functions know it without its code: every static field, each hook as "present". */
export const ToolDescriptionSchema = z
  .object({
    name: z.string().min(1).max(64),
    description: z.string(),
    inputSchema: JsonSchemaObject,
    outputSchema: JsonSchemaObject,
    risk: z.enum(['read', 'reversible_write', 'irreversible_write']),
    timeoutMs: z.number().positive(),
    maxAttempts: z.number().int().positive(),
    supportsIdempotency: z.boolean(),
    maxResultBytes: z.number().int().positive().optional(),
    deadlineSeconds: z.number().positive().optional(),
    backoff: z.object({ baseSeconds: z.number(), capSeconds: z.number() }).optional(),
    mcpClientCapabilities: z.record(z.string(), z.record(z.string(), z.unknown())).optional(),
    approval: z.enum(['never', 'always', 'predicate']),
    reconcile: z.boolean(),
    lockKey: z.boolean(),
    costCents: z.boolean(),
    describeForApproval: z.boolean(),
    secretFields: z.array(z.string()).max(100).optional(),
  })
  .strict();
export type ToolDescription = z.infer<typeof ToolDescriptionSchema>;

export const ToolsDescriptionSchema = z.object({ tools: z.array(ToolDescriptionSchema) });

export const ArgumentsCheckSchema = z.discriminatedUnion('ok', [
  z.object({
    ok: z.literal(true),
    value: z.unknown(),
    costCents: z.number().finite(),
    approval: z.boolean(),
    lockKey: z.string().optional(),
    approvalLines: z.array(z.string()),
  }),
  z.object({ ok: z.literal(false), message: z.string() }),
]);

/** The static description of a tool, as `Tools` answers `describe`. */
export function describeTool(spec: ToolSpec): ToolDescription {
  const json = (schema: z.ZodType, io: 'input' | 'output') => {
    const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as Record<
      string,
      unknown
    >;
    return rest;
  };
  return {
    name: spec.name,
    description: spec.description,
    inputSchema: json(spec.inputSchema, 'input'),
    // The caller checks what the tool returned, before any transform: the input side of the output schema.
    outputSchema: json(spec.outputSchema, 'input'),
    risk: spec.risk,
    timeoutMs: spec.timeoutMs,
    maxAttempts: spec.maxAttempts,
    supportsIdempotency: spec.supportsIdempotency,
    ...(spec.maxResultBytes === undefined ? {} : { maxResultBytes: spec.maxResultBytes }),
    ...(spec.deadlineSeconds === undefined ? {} : { deadlineSeconds: spec.deadlineSeconds }),
    ...(spec.backoff === undefined ? {} : { backoff: spec.backoff }),
    ...(spec.mcpClientCapabilities === undefined ? {} : { mcpClientCapabilities: spec.mcpClientCapabilities }),
    approval: typeof spec.approval === 'function' ? 'predicate' : spec.approval,
    reconcile: Boolean(spec.reconcile),
    lockKey: Boolean(spec.lockKey),
    costCents: Boolean(spec.costCents),
    describeForApproval: Boolean(spec.describeForApproval),
    ...(spec.secretFields === undefined ? {} : { secretFields: spec.secretFields }),
  };
}
