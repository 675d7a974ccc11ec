import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { OperationRecord } from '../../functions/core/model';
import type { ToolSpec } from '../../functions/core/tool-spec';

/** A minimal operation record for unit tests of the core: `proposed`, no attempts; override what matters. */
export function operation(over: Partial<OperationRecord> = {}): OperationRecord {
  return {
    schemaVersion: 2,
    operationId: 'op_1',
    runId: 'run_1',
    callId: 'call_1',
    turn: 1,
    toolName: 'charge_card',
    principalId: 'owner',
    state: 'proposed',
    rawArguments: '{}',
    inputHash: 'sha256:x',
    idempotencyKey: 'idk_x',
    attempts: 0,
    createdAt: '2026-11-30T12:00:00.000Z',
    updatedAt: '2026-11-30T12:00:00.000Z',
    version: 1,
    resumes: 0,
    ...over,
  };
}

/**
 * `count` validated `get_order` operations whose executions were lost at `lostAt` (their leases passed then),
 * each due for the sweeper to resume: what a crash or a state-machine replacement leaves behind.
 */
export function lostOperations(count: number, lostAt: string): OperationRecord[] {
  return Array.from({ length: count }, (_, i) =>
    operation({
      operationId: `op_${randomBytes(8).toString('hex')}`,
      runId: 'run_drain',
      callId: `call_${i}`,
      toolName: 'get_order',
      principalId: 'agent',
      state: 'validated',
      frozenArguments: '{}',
      idempotencyKey: `idk_${i}`,
      createdAt: lostAt,
      updatedAt: lostAt,
      version: 0,
      leaseUntil: lostAt,
      plan: { next: 'execute' },
    }),
  );
}

/** A minimal tool spec (an idempotent irreversible write with a lookup); override what matters. */
export function toolSpec(over: Partial<ToolSpec> = {}): ToolSpec {
  return {
    name: 'charge_card',
    description: 'Charges a card.',
    inputSchema: z.object({ amount: z.number().int() }),
    outputSchema: z.object({ id: z.string() }),
    risk: 'irreversible_write',
    timeoutMs: 5_000,
    maxAttempts: 3,
    supportsIdempotency: true,
    approval: 'never',
    execute: async () => ({ id: 'ch_1' }),
    ...over,
  };
}
