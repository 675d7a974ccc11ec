import { z } from 'zod';
import { RunnerError } from '../core/errors';
import type { ToolDescription } from '../core/tool-invocation';
import type { ToolRegistry, ToolSpec } from '../core/tool-spec';
import { zodFromJsonSchema } from './mcp-upstream';

/** A tool's hook was called where only the `Tools` function may run it: its answer was to be read from the operation. */
export class HookOutsideToolsError extends RunnerError {
  override name = 'HookOutsideToolsError' as const;
}

/** The JSON Schema a tool declared, as a zod schema (what zod cannot express is left to the tool's own check). */
function outputSchemaOf(schema: Record<string, unknown>): z.ZodType {
  try {
    return z.fromJSONSchema(schema as Parameters<typeof z.fromJSONSchema>[0]);
  } catch {
    return z.unknown();
  }
}

/**
 * What a tool's static description says, registered as a spec: its schemas from JSON Schema and its fields as
 * declared. Its hooks stay in `Tools`: each is present (the lifecycle asks whether a tool locks, looks up or
 * decides approval case by case) but refuses to run here, since its answer was stored with the operation.
 */
export function describedSpec(d: ToolDescription): ToolSpec {
  const elsewhere = (hook: string) => () => {
    throw new HookOutsideToolsError(`${d.name}: ${hook} runs in the Tools function only; its answer is stored with the operation`);
  };
  return {
    name: d.name,
    description: d.description,
    inputSchema: zodFromJsonSchema(d.inputSchema as Parameters<typeof zodFromJsonSchema>[0]),
    outputSchema: outputSchemaOf(d.outputSchema),
    risk: d.risk,
    timeoutMs: d.timeoutMs,
    maxAttempts: d.maxAttempts,
    supportsIdempotency: d.supportsIdempotency,
    ...(d.maxResultBytes === undefined ? {} : { maxResultBytes: d.maxResultBytes }),
    ...(d.deadlineSeconds === undefined ? {} : { deadlineSeconds: d.deadlineSeconds }),
    ...(d.backoff === undefined ? {} : { backoff: d.backoff }),
    ...(d.mcpClientCapabilities === undefined ? {} : { mcpClientCapabilities: d.mcpClientCapabilities }),
    ...(d.secretFields === undefined ? {} : { secretFields: d.secretFields }),
    approval: d.approval === 'predicate' ? elsewhere('approval') : d.approval,
    ...(d.reconcile ? { reconcile: elsewhere('reconcile') } : {}),
    ...(d.lockKey ? { lockKey: elsewhere('lockKey') } : {}),
    ...(d.costCents ? { costCents: elsewhere('costCents') } : {}),
    ...(d.describeForApproval ? { describeForApproval: elsewhere('describeForApproval') } : {}),
    execute: elsewhere('execute'),
  };
}

/**
 * The registry of a function that does not load the tools module: filled from `Tools`' description on its
 * first refresh, once per process (a failed describe is asked again on the next refresh).
 */
export function describedRegistry(describe: () => Promise<ToolDescription[]>): ToolRegistry & { refresh(): Promise<void> } {
  const registry = new Map<string, ToolSpec>() as Map<string, ToolSpec> & { refresh(): Promise<void> };
  let loaded: Promise<void> | undefined;
  registry.refresh = () => {
    loaded ??= describe().then(
      (tools) => {
        for (const d of tools) registry.set(d.name, describedSpec(d));
      },
      (error) => {
        loaded = undefined;
        throw error;
      },
    );
    return loaded;
  };
  return registry;
}
