import { type Context, type EventOf, type Handler, notBeforeIn, type ReconcileFinding, type Transition } from './lifecycle-events';
import { OperationState } from './lifecycle';
import type { OperationRecord } from './model';
import { recordLate, recordOutcome } from './settle';
import type { NewTraceEvent } from './trace';

const S = OperationState;

/** How a reconciliation starts and what its finding does to the record (events from steps/reconcile.ts). */

export const startReconcile: Handler<'start_reconcile'> = (op, event, { ids }) => ({
  op: { ...op, plan: { next: 'reconcile' }, leaseUntil: event.leaseUntil },
  events: [{ type: 'reconcile.started', ...ids, attempt: op.attempts, detail: { plan: event.plan } }],
});

type Finished = (detail: Record<string, unknown>) => NewTraceEvent;

export const finishReconcile: Handler<'finish_reconcile'> = (op, event, ctx) => {
  const f = event.finding;
  const finished: Finished = (detail) => ({
    type: 'reconcile.finished',
    ...ctx.ids,
    attempt: op.attempts,
    detail: { plan: event.plan, ...detail },
  });
  if (f.result === 'not_found' && f.lookAgainInSeconds !== undefined) {
    return {
      op: {
        ...op,
        plan: { next: 'reconcile_later', notBefore: notBeforeIn(ctx, f.lookAgainInSeconds) },
        leaseUntil: event.leaseUntil ?? op.leaseUntil,
      },
      events: [
        finished({ result: 'not_found', action: 'look_again' }),
        { type: 'backoff.scheduled', ...ctx.ids, detail: { delaySeconds: f.lookAgainInSeconds, reason: 'late_request_grace' } },
      ],
    };
  }
  if (op.state === S.reported) return settleLateAttempt(op, f, finished, ctx);
  switch (f.result) {
    case 'found': {
      const settled = recordOutcome(op, f.outcome);
      return { op: settled.op, events: [finished({ result: 'found' }), ...settled.events] };
    }
    case 'needs_review':
      return {
        op: { ...op, review: { required: true, reason: f.reason }, plan: { next: 'report' } },
        events: [finished({ result: 'needs_review', reason: f.reason })],
      };
    case 'lookup_failed': {
      const lookups = (op.reconcileAttempts ?? 0) + 1;
      if (f.retryInSeconds === undefined) {
        const reason = `status lookup failed ${lookups} times`;
        return {
          op: { ...op, reconcileAttempts: lookups, review: { required: true, reason }, plan: { next: 'report' } },
          events: [finished({ result: 'needs_review', reason })],
        };
      }
      return {
        op: {
          ...op,
          reconcileAttempts: lookups,
          plan: { next: 'reconcile_later', notBefore: notBeforeIn(ctx, f.retryInSeconds) },
          leaseUntil: event.leaseUntil ?? op.leaseUntil,
        },
        events: [finished({ result: 'lookup_failed', retryInSeconds: f.retryInSeconds })],
      };
    }
    case 'not_found':
      return notFound(op, event, f, finished, ctx);
  }
};

/** Nothing was found (or a replay is due): send the attempt again with the same key while attempts remain, else a person. */
function notFound(
  op: OperationRecord,
  event: EventOf<'finish_reconcile'>,
  f: Extract<ReconcileFinding, { result: 'not_found' }>,
  finished: Finished,
  ctx: Context,
): Transition {
  const result = event.plan === 'replay' ? 'replay' : 'not_found';
  if (!f.retry && event.plan === 'lookup' && op.outcome?.kind !== 'cancelled') {
    // A conclusive lookup (steps/reconcile.ts) is the upstream's own word: nothing took effect. With no attempts
    // left (or a failure waiting for this word) the call failed; no person is needed to say so.
    const settled = recordOutcome(
      { ...op, failureToConfirm: undefined },
      op.failureToConfirm ?? {
        kind: 'failed_permanent',
        code: 'upstream_unavailable',
        message: 'the upstream has no record of the call and no attempts are left; nothing took effect',
      },
    );
    return { op: settled.op, events: [finished({ result: 'not_found', action: 'fail' }), ...settled.events] };
  }
  if (!f.retry) {
    const reason = `${result}; no attempts left`;
    return {
      op: { ...op, review: { required: true, reason }, plan: { next: 'report' } },
      events: [finished({ result: 'needs_review', reason })],
    };
  }
  return {
    op: {
      ...op,
      plan: { next: 'retry', notBefore: notBeforeIn(ctx, f.retry.delaySeconds) },
      leaseUntil: event.leaseUntil ?? op.leaseUntil,
    },
    events: [
      finished({ result, action: 'retry_same_key' }),
      {
        type: 'backoff.scheduled',
        ...ctx.ids,
        attempt: op.attempts + 1,
        detail: { delaySeconds: f.retry.delaySeconds, reason: 'reconcile' },
      },
    ],
  };
}

/** What a reconciliation found about the attempt a cancel left in flight: recorded late, never reported. */
function settleLateAttempt(op: OperationRecord, f: ReconcileFinding, finished: Finished, ctx: Context): Transition {
  switch (f.result) {
    case 'found': {
      const late = recordLate(op, f.outcome, op.attempts);
      return { op: { ...late.op, plan: { next: 'done' }, leaseUntil: undefined }, events: [finished({ result: 'found' }), ...late.events] };
    }
    case 'not_found': {
      const none = { kind: 'failed_permanent', code: 'permanent_failure', message: 'the cancelled attempt had no effect' } as const;
      return {
        op: { ...op, lateOutcome: none, plan: { next: 'done' }, leaseUntil: undefined },
        events: [finished({ result: 'not_found' })],
      };
    }
    case 'lookup_failed':
      if (f.retryInSeconds !== undefined) {
        return {
          op: {
            ...op,
            reconcileAttempts: (op.reconcileAttempts ?? 0) + 1,
            plan: { next: 'reconcile_later', notBefore: notBeforeIn(ctx, f.retryInSeconds) },
          },
          events: [finished({ result: 'lookup_failed', retryInSeconds: f.retryInSeconds })],
        };
      }
      return {
        op: {
          ...op,
          review: { required: true, reason: 'the cancelled attempt may have taken effect; its lookup kept failing' },
          plan: { next: 'done' },
          leaseUntil: undefined,
        },
        events: [finished({ result: 'needs_review' })],
      };
    case 'needs_review':
      return {
        op: { ...op, review: { required: true, reason: f.reason }, plan: { next: 'done' }, leaseUntil: undefined },
        events: [finished({ result: 'needs_review', reason: f.reason })],
      };
  }
}
