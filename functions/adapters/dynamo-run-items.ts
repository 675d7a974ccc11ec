import type { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import type { RunRecord } from '../core/model';
import type { RunChange } from '../core/ports';
import { microsOfCents } from '../core/spend';
import type { TableNames } from './tables';

/** A run as stored, and the run's part of the transactions that admit or close it. */

/** A run as the core knows it: without the attribute that puts it in the runs list. */
export function runFromItem(item: Record<string, unknown>): RunRecord {
  const { listKey: _l, ...run } = item;
  return run as unknown as RunRecord;
}

export type TransactItem = NonNullable<ConstructorParameters<typeof TransactWriteCommand>[0]['TransactItems']>[number];

/** The run's part of a new operation's transaction: an admission or a closing, each conditional on what it needs. */
export function runChangeItem(tables: TableNames, run: RunRecord, change: RunChange, at: string): TransactItem | undefined {
  switch (change.kind) {
    case 'none':
      return undefined;
    case 'close':
      // Why: only an open run can become exhausted; a cancelled one stays cancelled.
      return statusChange(tables, run.runId, 'open', change.to, at);
    case 'admit': {
      const { delta } = change;
      const b = run.budgets;
      const turn = delta.opensTurn
        ? {
            set: ', #usage.turns = #usage.turns + :one, lastTurn = :turn',
            cond: ' AND lastTurn < :turn AND #usage.turns < :maxTurns',
            values: { ':maxTurns': b.maxTurns },
          }
        : { set: '', cond: ' AND lastTurn >= :turn', values: {} };
      // The loop fuse: this call's count in the run's map, under the same condition as the budgets.
      const loop = delta.identicalKey
        ? {
            set: ', identicalCalls.#ik = if_not_exists(identicalCalls.#ik, :zero) + :one',
            cond: ' AND (attribute_not_exists(identicalCalls.#ik) OR identicalCalls.#ik < :maxIdentical)',
            names: { '#ik': delta.identicalKey } as Record<string, string>,
            values: { ':zero': 0, ':maxIdentical': b.maxIdenticalCalls ?? Number.MAX_SAFE_INTEGER },
          }
        : { set: '', cond: '', names: {} as Record<string, string>, values: {} };
      // Spend: a run that reserved model calls holds its spend in `heldMicros` (tool and model spend and open
      // reservations, one field a condition can compare); a tool-only run in whole cents, written as before.
      const costMicros = microsOfCents(delta.costCents);
      const spend =
        run.usage.heldMicros !== undefined
          ? {
              set: ', #usage.heldMicros = #usage.heldMicros + :costMicros',
              cond: ' AND #usage.heldMicros <= :heldRoom',
              values: { ':costMicros': costMicros, ':heldRoom': microsOfCents(b.maxSpendCents) - costMicros } as Record<string, number>,
            }
          : {
              set: '',
              // A model reservation meanwhile adds `heldMicros`: this condition then fails and the caller decides again.
              cond: ' AND #usage.spendCents <= :spendRoom AND attribute_not_exists(#usage.heldMicros)',
              values: { ':spendRoom': b.maxSpendCents - delta.costCents } as Record<string, number>,
            };
      return {
        Update: {
          TableName: tables.runs,
          Key: { runId: run.runId },
          UpdateExpression: `SET #usage.toolCalls = #usage.toolCalls + :one, #usage.spendCents = #usage.spendCents + :cost, updatedAt = :at${turn.set}${loop.set}${spend.set}`,
          // Why: the budgets' own fields, not the run's version, so concurrent calls never invalidate each other
          // (this is admissionHolds in core/budgets.ts, written as a condition).
          ConditionExpression: `#status = :open AND deadlineAt > :now AND #usage.toolCalls < :maxCalls${spend.cond}${turn.cond}${loop.cond}`,
          ExpressionAttributeNames: { '#status': 'status', '#usage': 'usage', ...loop.names },
          ExpressionAttributeValues: {
            ':one': 1,
            ':cost': delta.costCents,
            ':at': at,
            ':turn': delta.turn,
            ':open': 'open',
            ':now': new Date(change.now).toISOString(),
            ':maxCalls': b.maxToolCalls,
            ...spend.values,
            ...turn.values,
            ...loop.values,
          },
        },
      };
    }
  }
}

/** A run's status moving from the one read (`from`) to `to`, conditional on it still being `from`. */
export function statusChange(
  tables: TableNames,
  runId: string,
  from: RunRecord['status'],
  to: RunRecord['status'],
  at: string,
): TransactItem {
  return {
    Update: {
      TableName: tables.runs,
      Key: { runId },
      UpdateExpression: 'SET #status = :to, updatedAt = :at',
      ConditionExpression: '#status = :from',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: { ':to': to, ':from': from, ':at': at },
    },
  };
}
