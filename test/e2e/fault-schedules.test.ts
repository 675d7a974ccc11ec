import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seeded } from '../support/seeded';
import { startTestStack, type TestStack } from '../support/stack';

const SEED = Number(process.env.FAULT_SEED ?? 20261130);
const ROUNDS = Number(process.env.FAULT_ROUNDS ?? 5);
const CALLS_PER_ROUND = 8;
const MODES = ['commit_then_timeout', 'fail_503', 'rate_limit_429', 'hang', 'permanent_402', 'reset_connection'] as const;

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack({ seed: SEED });
});
afterAll(async () => stack?.stop());

describe('randomized fault schedules against charge_card', () => {
  it(`never charges twice and always ends reported or flagged for review (seed ${SEED})`, async () => {
    const rng = seeded(SEED);
    const pick = <T>(items: readonly T[]) => items[Math.floor(rng() * items.length)];
    const { api, keys, sandbox } = stack;
    const started = Date.now();
    const summary = { schedules: 0, duplicates: 0, succeeded: 0, failed: 0, review: 0, faults: 0 };
    const context = (detail: string) => `seed ${SEED}: ${detail} (rerun with FAULT_SEED=${SEED})`;

    for (let round = 0; round < ROUNDS; round++) {
      await sandbox.reset();
      const faults = Math.floor(rng() * 6);
      for (let i = 0; i < faults; i++) {
        const mode = pick(MODES);
        // Faults on the status lookup too, so reconciliation itself sometimes fails.
        const route = rng() < 0.2 ? 'GET /v1/charges' : 'POST /v1/charges';
        await sandbox.fault({ route, mode, count: 1 + Math.floor(rng() * 2), retryAfterSeconds: Math.floor(rng() * 2), delayMs: 4000 });
        summary.faults++;
      }
      const runId = await api.createRun(keys.agent);
      const calls = Array.from({ length: CALLS_PER_ROUND }, (_, i) => ({
        callId: `call_r${round}_${i}`,
        name: 'charge_card',
        arguments: { amount: 100 + Math.floor(rng() * 1000), currency: 'USD', customer: `cus_${i}` },
      }));
      const replies = await Promise.all(calls.map((c) => api.call(keys.agent, runId, c, 0)));
      const ops = await Promise.all(
        replies.map((r) =>
          api.until(
            `operation ${r.body.operationId} to settle`,
            () => api.operation(keys.agent, r.body.operationId),
            (op) => op.state === 'reported' || Boolean(op.review?.required && op.envelope),
            90_000,
          ),
        ),
      );
      const ledger = await sandbox.ledger();
      const byKey = new Map<string, number>();
      for (const entry of ledger) {
        expect(entry.idempotencyKey, context('a charge without an idempotency key')).toBeDefined();
        byKey.set(entry.idempotencyKey!, (byKey.get(entry.idempotencyKey!) ?? 0) + 1);
      }
      const ours = new Set(ops.map((op) => op.idempotencyKey));
      for (const key of byKey.keys()) expect(ours.has(key), context('a charge nobody asked for')).toBe(true);
      for (const op of ops) {
        summary.schedules++;
        const charges = byKey.get(op.idempotencyKey) ?? 0;
        if (charges > 1) summary.duplicates++;
        expect(charges, context(`${op.operationId} charged ${charges} times`)).toBeLessThanOrEqual(1);
        const flagged = op.state === 'outcome_unknown' && op.review?.required === true;
        expect(op.state === 'reported' || flagged, context(`${op.operationId} ended ${op.state}`)).toBe(true);
        if (op.envelope.status === 'succeeded') {
          summary.succeeded++;
          expect(charges, context(`${op.operationId} succeeded without a charge`)).toBe(1);
          expect(op.envelope.result.id).toBe(ledger.find((e) => e.idempotencyKey === op.idempotencyKey)!.id);
        } else if (op.envelope.status === 'failed') {
          summary.failed++;
          // A failure is only ever reported when nothing happened upstream.
          expect(charges, context(`${op.operationId} reported failed but charged`)).toBe(0);
        } else {
          summary.review++;
          expect(op.envelope.status, context(`${op.operationId} envelope`)).toBe('outcome_unknown');
        }
      }
    }
    console.log(`fault schedules: ${JSON.stringify({ seed: SEED, ...summary, seconds: Math.round((Date.now() - started) / 100) / 10 })}`);
    expect(summary.schedules).toBe(ROUNDS * CALLS_PER_ROUND);
  }, 600_000);
});
