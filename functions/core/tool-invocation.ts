import { z } from 'zod';

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

export const ToolAnswerSchema = z.discriminatedUnion('ok', [
  z.object({ ok: z.literal(true), value: z.unknown(), upstreamStatus: z.number().int().optional() }),
  z.object({ ok: z.literal(false), error: CrossedErrorSchema, upstreamStatus: z.number().int().optional() }),
]);
export type ToolAnswer = z.infer<typeof ToolAnswerSchema>;

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
