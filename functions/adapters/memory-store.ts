import { admissionHolds, applyAdmission } from '../core/budgets';
import { canTransition, OperationState } from '../core/lifecycle';
import type { OperationRecord, RunRecord } from '../core/model';
import { approvalTtlUsed } from '../core/metric-names';
import { isActive, isOwnOperation } from '../core/record-predicates';
import { type LifecyclePort, OperationConflictError, OperationExistsError, RunChangedError, type Store } from '../core/ports';
import type { TraceEvent } from '../core/trace';

/**
 * The store port in memory (tests, and `toolrunner/testing`'s in-process runner), with the same conditional
 * semantics as the DynamoDB store: creation once per
 * id, moves conditional on (state, version), admission conditional on the budget fields, status changes
 * conditional on the status read. It also refuses any move outside the lifecycle table, so model-based
 * tests catch an illegal transition the moment a step tries to write it.
 */
export function memoryStore(clock: () => number = Date.now): Store & {
  runs: Map<string, RunRecord>;
  ops: Map<string, OperationRecord>;
  events: Map<string, TraceEvent[]>;
  locks: Map<string, { owner: string; until: number }>;
  rateCounts: Map<string, number>;
  rateSlots: Map<string, { holder: string; until: number }>;
  mcpRuns: Map<string, string>;
} {
  const runs = new Map<string, RunRecord>();
  const ops = new Map<string, OperationRecord>();
  const events = new Map<string, TraceEvent[]>();
  const counters = new Map<string, number>();
  const locks = new Map<string, { owner: string; until: number }>();
  const rateCounts = new Map<string, number>();
  const rateSlots = new Map<string, { holder: string; until: number }>();
  const mcpRuns = new Map<string, string>();
  const clone = <T>(v: T): T => structuredClone(v);
  const sequence = (runId: string, list: Omit<TraceEvent, 'seq' | 'at' | 'runId'>[]): TraceEvent[] => {
    const at = new Date(clock()).toISOString();
    const start = counters.get(runId) ?? 0;
    counters.set(runId, start + list.length);
    return list.map((e, i) => ({ ...e, seq: start + i + 1, at, runId }));
  };
  const append = (runId: string, traced: TraceEvent[]) => events.set(runId, [...(events.get(runId) ?? []), ...traced]);

  return {
    runs,
    ops,
    events,
    locks,
    rateCounts,
    rateSlots,
    mcpRuns,
    async getRun(runId) {
      return clone(runs.get(runId));
    },
    async getOperation(id) {
      return clone(ops.get(id));
    },
    async putNewRun(run) {
      if (runs.has(run.runId)) throw new Error('run exists');
      runs.set(run.runId, clone(run));
    },
    async createOperation({ run, runChange, op, events: list }) {
      if (!list.length) throw new Error('an operation is created with its first trace events');
      if (ops.has(op.operationId)) throw new OperationExistsError(clone(ops.get(op.operationId)));
      const stored = runs.get(run.runId);
      if (!stored) throw new Error('no run');
      const at = new Date(clock()).toISOString();
      let nextRun = stored;
      // As the DynamoDB store: a run's change (an admission or a status) sets its updatedAt.
      if (runChange.kind === 'admit') {
        if (!admissionHolds(stored, runChange.delta, runChange.now)) throw new RunChangedError('the run changed');
        nextRun = { ...applyAdmission(stored, runChange.delta), updatedAt: at };
      } else if (runChange.kind === 'close') {
        if (stored.status !== 'open') throw new RunChangedError('the run changed');
        nextRun = { ...stored, status: runChange.to, updatedAt: at };
      }
      const traced = sequence(run.runId, list);
      const created = { ...clone(op), version: 1, updatedAt: at };
      runs.set(run.runId, nextRun);
      ops.set(op.operationId, created);
      append(run.runId, traced);
      return { op: clone(created), events: traced };
    },
    async updateOperation(before, after, list) {
      const current = ops.get(before.operationId);
      if (!current || current.state !== before.state || current.version !== before.version)
        throw new OperationConflictError(clone(current));
      if (!reachable(before.state, after.state)) throw new Error(`illegal move ${before.state} -> ${after.state}`);
      const traced = sequence(before.runId, list);
      const next = { ...clone(after), version: before.version + 1, updatedAt: new Date(clock()).toISOString() };
      ops.set(before.operationId, next);
      append(before.runId, traced);
      return { op: clone(next), events: traced };
    },
    async updateRunStatus(run, to, list) {
      const stored = runs.get(run.runId);
      if (!stored || stored.status !== run.status) throw new RunChangedError('the run changed');
      const traced = sequence(run.runId, list);
      const next = { ...stored, status: to, updatedAt: new Date(clock()).toISOString() };
      runs.set(run.runId, next);
      append(run.runId, traced);
      return clone(next);
    },
    async appendRunEvents(runId, list) {
      const traced = sequence(runId, list);
      append(runId, traced);
      return clone(traced);
    },
    async listEvents(runId) {
      return clone(events.get(runId) ?? []);
    },
    async listOperationsOfRun(runId) {
      return clone([...ops.values()].filter((o) => o.runId === runId));
    },
    async listExpiredLeases(now, limit, options = {}) {
      return clone(
        [...ops.values()].filter((o) => isActive(o) && (options.ignoreLeases || (o.leaseUntil ?? o.updatedAt) < now)).slice(0, limit),
      );
    },
    async listPendingApprovals({ approverId, now, limit, after }) {
      const pending = [...ops.values()]
        .filter(
          (o) =>
            o.state === 'awaiting_approval' &&
            o.approval?.state === 'pending' &&
            !isOwnOperation(approverId, o) &&
            o.approval.expiresAt > now,
        )
        .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.operationId.localeCompare(b.operationId));
      const start = after ? pending.findIndex((o) => o.operationId === after.operationId) + 1 : 0;
      const items = pending.slice(start, start + limit);
      const last = items.at(-1);
      return {
        items: clone(items),
        ...(last && start + limit < pending.length
          ? { nextKey: { approvalPendingKey: 'pending', createdAt: last.createdAt, operationId: last.operationId } }
          : {}),
      };
    },
    async listRuns({ limit, after, matches = () => true }) {
      const newestFirst = [...runs.values()].sort((a, b) => b.createdAt.localeCompare(a.createdAt) || b.runId.localeCompare(a.runId));
      const start = after ? newestFirst.findIndex((r) => r.runId === after.runId) + 1 : 0;
      const items: RunRecord[] = [];
      for (let i = start; i < newestFirst.length; i++) {
        if (!matches(newestFirst[i])) continue;
        items.push(newestFirst[i]);
        if (items.length === limit)
          return {
            items: clone(items),
            ...(i < newestFirst.length - 1
              ? { nextKey: { listKey: 'runs', createdAt: items[limit - 1].createdAt, runId: items[limit - 1].runId } }
              : {}),
          };
      }
      return { items: clone(items) };
    },
    async listOpenReviews(limit) {
      return clone([...ops.values()].filter((o) => o.state === 'outcome_unknown' && o.review?.required).slice(0, limit));
    },
    async countWaiting(now) {
      const all = [...ops.values()];
      const pending = all
        .filter((o) => o.state === 'awaiting_approval' && o.approval?.state === 'pending' && o.approval.expiresAt > now)
        .sort((a, b) => a.createdAt.localeCompare(b.createdAt));
      return {
        approvalsWaiting: pending.length,
        oldestApprovalTtlUsed: pending.length ? approvalTtlUsed(pending[0].createdAt, pending[0].approval!.expiresAt, now) : 0,
        reviewsOpen: all.filter((o) => o.state === 'outcome_unknown' && o.review?.required).length,
      };
    },
    async acquireLock(key, owner, leaseMs, now) {
      const held = locks.get(key);
      if (held && held.owner !== owner && held.until >= now) return false;
      locks.set(key, { owner, until: now + leaseMs });
      return true;
    },
    async releaseLock(key, owner) {
      if (locks.get(key)?.owner === owner) locks.delete(key);
    },
    async takeRateCount(key, limit) {
      const n = rateCounts.get(key) ?? 0;
      if (n >= limit) return false;
      rateCounts.set(key, n + 1);
      return true;
    },
    async giveBackRateCount(key) {
      const n = rateCounts.get(key) ?? 0;
      if (n > 0) rateCounts.set(key, n - 1);
    },
    async takeRateSlot(key, holder, until, now) {
      const held = rateSlots.get(key);
      if (held && held.holder !== holder && held.until >= now) return false;
      rateSlots.set(key, { holder, until });
      return true;
    },
    async giveBackRateSlot(key, holder) {
      if (rateSlots.get(key)?.holder === holder) rateSlots.delete(key);
    },
    async currentMcpRun(principalId) {
      return mcpRuns.get(principalId);
    },
    async replaceCurrentMcpRun(principalId, expected, runId) {
      if (mcpRuns.get(principalId) !== expected) return false;
      mcpRuns.set(principalId, runId);
      return true;
    },
  };
}

/** One write may chain moves (recorded then reported); each hop must be in the lifecycle table. */
function reachable(from: OperationState, to: OperationState): boolean {
  const seen = new Set<OperationState>([from]);
  const queue = [from];
  while (queue.length) {
    const state = queue.shift()!;
    if (state === to) return true;
    for (const next of Object.values(OperationState)) {
      if (seen.has(next) || !canTransition(state, next)) continue;
      seen.add(next);
      queue.push(next);
    }
  }
  return false;
}

/** A lifecycle port that starts nothing: for tests that drive the steps themselves. */
export const idleLifecycle: LifecyclePort = {
  start: async () => undefined,
  stop: async () => undefined,
  sendTaskSuccess: async () => undefined,
  sendTaskFailure: async () => undefined,
};
