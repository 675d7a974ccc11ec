import { admissionHolds, applyAdmission } from '../core/budgets';
import { canTransition, OperationState } from '../core/lifecycle';
import type { OperationRecord, RunRecord } from '../core/model';
import { approvalTtlUsed } from '../core/metric-names';
import { isActive, isOwnOperation } from '../core/record-predicates';
import {
  type LifecyclePort,
  type LockStore,
  type McpRunStore,
  ModelCallChangedError,
  ModelCallExistsError,
  type ModelCallStore,
  OperationConflictError,
  OperationExistsError,
  type OperationStore,
  type RateLimitStore,
  type RecoveryStore,
  type ReviewQueries,
  type RollupStore,
  RunChangedError,
  type RunStore,
  SpendCounterChangedError,
  type Store,
  type TraceStore,
} from '../core/ports';
import type { NewTraceEvent, TraceEvent } from '../core/trace';
import { type ModelCallRecord, withCharge, withReservation } from '../core/model-calls';
import { heldMicrosOf, microsOfCents } from '../core/spend';
import { minuteOfCounters } from '../core/rollups';
import type { ThresholdTarget } from '../core/budget-thresholds';
import { counterKeyOf, type SpendCounterRef, type SpendTake, takeFits } from '../core/spend-limits';

/** The maps behind the in-memory store, shared by its roles; tests read them to check what was written. */
export interface MemoryState {
  runs: Map<string, RunRecord>;
  ops: Map<string, OperationRecord>;
  events: Map<string, TraceEvent[]>;
  locks: Map<string, { owner: string; until: number }>;
  rateCounts: Map<string, number>;
  rateSlots: Map<string, { holder: string; until: number }>;
  mcpRuns: Map<string, string>;
  modelCalls: Map<string, ModelCallRecord>;
  /** The overview's counters by minute (`YYYY-MM-DDTHH:MM`). */
  rollups: Map<string, Record<string, number>>;
  /** Principals' spend counters by `counterKeyOf`, in micro-cents (config `spendLimits`). */
  spendCounters: Map<string, number>;
  /** Thresholds told (`budget.threshold`), per run or counter and percent. */
  thresholdMarks: Set<string>;
}

/** How every role writes a run's trace: numbered on from the run's last event, dated by the store's clock. */
interface MemoryTrace {
  sequence(runId: string, list: NewTraceEvent[]): TraceEvent[];
  append(runId: string, traced: TraceEvent[]): void;
}

const clone = <T>(v: T): T => structuredClone(v);

/**
 * The store port in memory (tests, and `toolrunner/testing`'s in-process runner), with the same conditional
 * semantics as the DynamoDB store: creation once per
 * id, moves conditional on (state, version), admission conditional on the budget fields, status changes
 * conditional on the status read. It also refuses any move outside the lifecycle table, so model-based
 * tests catch an illegal transition the moment a step tries to write it.
 */
export function memoryStore(clock: () => number = Date.now): Store & MemoryState {
  const state: MemoryState = {
    runs: new Map(),
    ops: new Map(),
    events: new Map(),
    locks: new Map(),
    rateCounts: new Map(),
    rateSlots: new Map(),
    mcpRuns: new Map(),
    modelCalls: new Map(),
    rollups: new Map(),
    spendCounters: new Map(),
    thresholdMarks: new Set(),
  };
  const counters = new Map<string, number>();
  const trace: MemoryTrace = {
    sequence(runId, list) {
      const at = new Date(clock()).toISOString();
      const start = counters.get(runId) ?? 0;
      counters.set(runId, start + list.length);
      return list.map((e, i) => ({ ...e, seq: start + i + 1, at, runId }));
    },
    append: (runId, traced) => state.events.set(runId, [...(state.events.get(runId) ?? []), ...traced]),
  };
  // A threshold's mark key and what its target holds: the run's spend, or the principal's counter.
  const thresholdPrefix = (target: ThresholdTarget) => (target.scope === 'run' ? `run#${target.runId}#` : `${counterKeyOf(target.ref)}#`);
  const heldFor = (target: ThresholdTarget): number => {
    if (target.scope === 'principal') return state.spendCounters.get(counterKeyOf(target.ref)) ?? 0;
    const stored = state.runs.get(target.runId);
    return stored ? heldMicrosOf(stored.usage) : 0;
  };
  return {
    ...state,
    ...memoryOperations(state, trace, clock),
    ...memoryRuns(state, trace, clock),
    ...memoryTraceStore(state, trace),
    ...memoryRecovery(state),
    ...memoryReviews(state),
    ...memoryLocks(state),
    ...memoryRateLimits(state),
    ...memoryMcpRuns(state),
    ...memoryModelCalls(state, trace, clock),
    ...memoryRollups(state),
    async markThreshold(target, percent, atMicros) {
      const key = `${thresholdPrefix(target)}${percent}`;
      if (state.thresholdMarks.has(key) || heldFor(target) < atMicros) return false;
      state.thresholdMarks.add(key);
      return true;
    },
    async readThresholds(target) {
      const prefix = thresholdPrefix(target);
      return {
        heldMicros: heldFor(target),
        marked: [...state.thresholdMarks].filter((k) => k.startsWith(prefix)).map((k) => Number(k.slice(prefix.length))),
      };
    },
    async getSpendCounters(refs) {
      return Object.fromEntries(
        refs.flatMap((r) =>
          state.spendCounters.has(counterKeyOf(r)) ? [[counterKeyOf(r), state.spendCounters.get(counterKeyOf(r))!]] : [],
        ),
      );
    },
  };
}

/** As the DynamoDB store: every counter a call moves must keep it within its cap, or none moves. */
function takeSpend(counters: Map<string, number>, takes: readonly SpendTake[] | undefined): void {
  if (!takes?.length) return;
  if (takes.some((t) => !takeFits(t, counters.get(counterKeyOf(t)) ?? 0))) throw new SpendCounterChangedError('a spend counter moved');
  for (const t of takes) counters.set(counterKeyOf(t), (counters.get(counterKeyOf(t)) ?? 0) + t.micros);
}

/** A charge moves the counters the reservation moved by the difference, with no condition (the call happened). */
function adjustSpend(counters: Map<string, number>, refs: readonly SpendCounterRef[] | undefined, micros: number): void {
  for (const r of refs ?? []) counters.set(counterKeyOf(r), (counters.get(counterKeyOf(r)) ?? 0) + micros);
}

function memoryModelCalls({ runs, modelCalls, spendCounters }: MemoryState, trace: MemoryTrace, clock: () => number): ModelCallStore {
  return {
    async getModelCall(id) {
      return clone(modelCalls.get(id));
    },
    async reserveModelCall({ run, call, events, spend }) {
      const existing = modelCalls.get(call.modelCallId);
      if (existing) throw new ModelCallExistsError(clone(existing));
      const stored = runs.get(run.runId);
      if (!stored) throw new Error('no run');
      const now = clock();
      // As the DynamoDB store: conditional on the run open and its held spend leaving room, never on the whole run.
      if (
        stored.status !== 'open' ||
        now >= Date.parse(stored.deadlineAt) ||
        heldMicrosOf(stored.usage) + call.reservedMicros > microsOfCents(stored.budgets.maxSpendCents)
      )
        throw new RunChangedError('the run changed');
      takeSpend(spendCounters, spend);
      const at = new Date(now).toISOString();
      runs.set(run.runId, { ...stored, usage: withReservation(stored.usage, call.reservedMicros), updatedAt: at });
      modelCalls.set(call.modelCallId, clone(call));
      trace.append(run.runId, trace.sequence(run.runId, events));
      return clone(call);
    },
    async chargeModelCall({ before, after, events }) {
      const current = modelCalls.get(before.modelCallId);
      if (!current || current.state !== before.state) throw new ModelCallChangedError('the model call changed');
      const stored = runs.get(before.runId);
      if (!stored) throw new Error('no run');
      const at = new Date(clock()).toISOString();
      adjustSpend(spendCounters, before.spendCounters, (after.chargedMicros ?? 0) - before.reservedMicros);
      runs.set(before.runId, {
        ...stored,
        usage: withCharge(stored.usage, before.reservedMicros, after.chargedMicros ?? 0),
        updatedAt: at,
      });
      modelCalls.set(before.modelCallId, clone(after));
      trace.append(before.runId, trace.sequence(before.runId, events));
      return clone(after);
    },
  };
}

function memoryOperations({ runs, ops, spendCounters }: MemoryState, trace: MemoryTrace, clock: () => number): OperationStore {
  return {
    async getOperation(id) {
      return clone(ops.get(id));
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
        takeSpend(spendCounters, runChange.spend);
        nextRun = { ...applyAdmission(stored, runChange.delta), updatedAt: at };
      } else if (runChange.kind === 'close') {
        if (stored.status !== 'open') throw new RunChangedError('the run changed');
        nextRun = { ...stored, status: runChange.to, updatedAt: at };
      }
      const traced = trace.sequence(run.runId, list);
      const created = { ...clone(op), version: 1, updatedAt: at };
      runs.set(run.runId, nextRun);
      ops.set(op.operationId, created);
      trace.append(run.runId, traced);
      return { op: clone(created), events: traced };
    },
    async updateOperation(before, after, list) {
      const current = ops.get(before.operationId);
      if (!current || current.state !== before.state || current.version !== before.version)
        throw new OperationConflictError(clone(current));
      if (!reachable(before.state, after.state)) throw new Error(`illegal move ${before.state} -> ${after.state}`);
      const traced = trace.sequence(before.runId, list);
      const next = { ...clone(after), version: before.version + 1, updatedAt: new Date(clock()).toISOString() };
      ops.set(before.operationId, next);
      trace.append(before.runId, traced);
      return { op: clone(next), events: traced };
    },
    async listOperationsOfRun(runId) {
      return clone([...ops.values()].filter((o) => o.runId === runId));
    },
  };
}

function memoryRuns({ runs }: MemoryState, trace: MemoryTrace, clock: () => number): RunStore {
  return {
    async getRun(runId) {
      return clone(runs.get(runId));
    },
    async putNewRun(run) {
      if (runs.has(run.runId)) throw new Error('run exists');
      runs.set(run.runId, clone(run));
    },
    async updateRunStatus(run, to, list) {
      const stored = runs.get(run.runId);
      if (!stored || stored.status !== run.status) throw new RunChangedError('the run changed');
      const traced = trace.sequence(run.runId, list);
      const next = { ...stored, status: to, updatedAt: new Date(clock()).toISOString() };
      runs.set(run.runId, next);
      trace.append(run.runId, traced);
      return clone(next);
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
  };
}

function memoryTraceStore({ events }: MemoryState, trace: MemoryTrace): TraceStore {
  return {
    async appendRunEvents(runId, list) {
      const traced = trace.sequence(runId, list);
      trace.append(runId, traced);
      return clone(traced);
    },
    async listEvents(runId) {
      return clone(events.get(runId) ?? []);
    },
  };
}

function memoryRecovery({ ops }: MemoryState): RecoveryStore {
  return {
    async listExpiredLeases(now, limit, options = {}) {
      return clone(
        [...ops.values()].filter((o) => isActive(o) && (options.ignoreLeases || (o.leaseUntil ?? o.updatedAt) < now)).slice(0, limit),
      );
    },
  };
}

function memoryReviews({ ops }: MemoryState): ReviewQueries {
  return {
    async listPendingApprovals({ approverId, now, limit, after }) {
      const pending = [...ops.values()]
        .filter(
          (o) =>
            o.state === 'awaiting_approval' &&
            o.approval?.state === 'pending' &&
            (approverId === null || !isOwnOperation(approverId, o)) &&
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
  };
}

function memoryLocks({ locks }: MemoryState): LockStore {
  return {
    async acquireLock(key, owner, leaseMs, now) {
      const held = locks.get(key);
      if (held && held.owner !== owner && held.until >= now) return false;
      locks.set(key, { owner, until: now + leaseMs });
      return true;
    },
    async releaseLock(key, owner) {
      if (locks.get(key)?.owner === owner) locks.delete(key);
    },
  };
}

function memoryRateLimits({ rateCounts, rateSlots }: MemoryState): RateLimitStore {
  return {
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
  };
}

function memoryMcpRuns({ mcpRuns }: MemoryState): McpRunStore {
  return {
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
function memoryRollups({ rollups }: MemoryState): RollupStore {
  return {
    async addToRollup({ minute, counters }) {
      const item = rollups.get(minute) ?? {};
      for (const [name, value] of Object.entries(counters)) item[name] = (item[name] ?? 0) + value;
      rollups.set(minute, item);
    },
    async readRollups(first, last) {
      return [...rollups.entries()]
        .filter(([minute]) => minute >= first && minute <= last)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([minute, item]) => minuteOfCounters(minute, item));
    },
  };
}

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
