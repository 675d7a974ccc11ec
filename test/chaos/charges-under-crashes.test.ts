import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { operationIdFor } from '../../functions/core/ids';
import { freePort } from '../../local/dynamodb-local';
import { agentAndReviewerDataDir, type NpmStarted, npmStart } from '../support/npm-start';
import { seeded } from '../support/seeded';
import { Api, type LedgerEntry, Sandbox } from '../support/stack';
import { isEmbedded } from '../support/target';

/**
 * Charges under random upstream faults while `npm start` is SIGKILLed at random moments and restarted on
 * the same data: none lost, none duplicated, and none sent to a person (`charge_card` has a status lookup,
 * which settles every unknown outcome). Seeded: CHAOS_SEED repeats a run; CHAOS_CHARGES and CHAOS_KILLS
 * size it. Minutes long, so `npm run test:chaos` runs it (CI too); `npm test` skips it.
 *
 * `CHAOS_TARGET=template` runs `npm start` in template mode (the synthesized stack: the account's concurrency
 * pool and Lambda's throttling) with AWS's behaviours injected: `TOOLRUNNER_AWS_FAULTS` (default all of
 * duplicate-delivery, throttle, cold-start, eventual-reads), seeded from CHAOS_SEED.
 */
const SEED = Number(process.env.CHAOS_SEED ?? 20_261_202);
const CHARGES = Number(process.env.CHAOS_CHARGES ?? 300);
const KILLS = Number(process.env.CHAOS_KILLS ?? 12);
const RUNS = 10;
const CONCURRENCY = 8;
const FAULT_MODES = ['fail_503', 'commit_then_timeout', 'reset_connection', 'rate_limit_429', 'hang'] as const;
const TEMPLATE = process.env.CHAOS_TARGET === 'template';
const AWS_FAULTS = process.env.TOOLRUNNER_AWS_FAULTS ?? 'duplicate-delivery,throttle,cold-start,eventual-reads';

const { dataDir, configPath, agentKey, reviewerKey, remove } = agentAndReviewerDataDir('chaos');

let started: NpmStarted | undefined;
afterAll(async () => {
  if (started?.alive()) await started.signalGroup('SIGKILL').catch(() => undefined);
  remove();
});

/** What template mode's AWS did in every process of the run: the last line each wrote to logs/aws.jsonl, summed. */
function awsActivity(dir: string): Record<string, unknown> {
  const file = join(dir, 'logs', 'aws.jsonl');
  if (!existsSync(file)) return {};
  const last = new Map<number, Record<string, any>>();
  for (const line of readFileSync(file, 'utf8').split('\n').filter(Boolean)) {
    const record = JSON.parse(line);
    last.set(record.pid, record);
  }
  const sum: Record<string, any> = { duplicatesDelivered: 0, throttled: 0, coldStarts: 0, staleReads: 0, throttles: {} };
  for (const r of last.values()) {
    for (const k of ['duplicatesDelivered', 'throttled', 'coldStarts', 'staleReads']) sum[k] += r[k] ?? 0;
    for (const [fn, n] of Object.entries(r.throttles ?? {})) sum.throttles[fn] = (sum.throttles[fn] ?? 0) + (n as number);
  }
  return sum;
}

/** Retries `f` while the runner is down (connection refused, reset) until it answers or the deadline passes. */
async function whileDown<T>(what: string, f: () => Promise<T>, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await f();
    } catch (error) {
      if (Date.now() > deadline) throw new Error(`${what}: ${(error as Error).message}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

describe.runIf(isEmbedded && process.env.TOOLRUNNER_CHAOS === '1')('charges under crashes and upstream faults', () => {
  const where = TEMPLATE ? ` in template mode with ${AWS_FAULTS}` : '';
  it(
    `${CHARGES} charges, ${KILLS} SIGKILLs of npm start${where} (seed ${SEED}): 0 lost, 0 duplicated, 0 sent to a person`,
    async () => {
      const rng = seeded(SEED);
      const pick = <T>(items: readonly T[]) => items[Math.floor(rng() * items.length)];
      const ports = { api: await freePort(), sandbox: await freePort() };
      const env = {
        PORT: String(ports.api),
        SANDBOX_PORT: String(ports.sandbox),
        TOOLRUNNER_DATA_DIR: dataDir,
        TOOLRUNNER_CONFIG: configPath,
        ...(TEMPLATE
          ? { TOOLRUNNER_HANDLERS: 'template', TOOLRUNNER_AWS_FAULTS: AWS_FAULTS, TOOLRUNNER_AWS_FAULTS_SEED: String(SEED) }
          : {}),
      };
      const begun = Date.now();
      started = await npmStart(env);
      if (TEMPLATE) {
        // Before `ready:`, what the emulated AWS is: the account's pool and the faults, with their seed.
        const lines = started.output().split('\n');
        const aws = lines.findIndex((l) => l.startsWith('aws: '));
        expect(lines[aws]).toBe(
          `aws: concurrency ${process.env.TOOLRUNNER_ACCOUNT_CONCURRENCY ?? 50}, faults ${AWS_FAULTS.split(',').join(', ')} (seed ${SEED})`,
        );
        expect(aws).toBeLessThan(lines.findIndex((l) => l.startsWith('ready: ')));
      }
      const api = new Api(`http://127.0.0.1:${ports.api}`);
      const sandbox = new Sandbox(`http://127.0.0.1:${ports.sandbox}`);
      const runIds: string[] = [];
      for (let i = 0; i < RUNS; i++) runIds.push(await api.createRun(agentKey, { maxToolCalls: 1000, maxTurns: 1000, maxSpendCents: 1e9 }));

      // The calls an agent makes; after a crash it submits the same (runId, callId) again, as it should.
      const calls = Array.from({ length: CHARGES }, (_, i) => ({
        runId: runIds[i % RUNS],
        callId: `call_chaos_${i}`,
        name: 'charge_card',
        arguments: { amount: 100 + Math.floor(rng() * 40_000), currency: 'USD', customer: `cus_${i}` },
      }));
      const faultPlan = calls.map(() =>
        rng() < 0.35
          ? {
              route: rng() < 0.25 ? 'GET /v1/charges' : 'POST /v1/charges',
              mode: pick(FAULT_MODES),
              count: 1 + Math.floor(rng() * 2),
              retryAfterSeconds: Math.floor(rng() * 2),
              delayMs: 4_000,
            }
          : undefined,
      );
      const killDelays = Array.from({ length: KILLS }, () => 1_500 + Math.floor(rng() * 3_500));
      const stats = { faults: 0, resubmits: 0, restartsMs: [] as number[] };

      let next = 0;
      const submitter = async () => {
        while (next < calls.length) {
          const i = next++;
          const fault = faultPlan[i];
          if (fault) {
            // Best effort: while the runner (and its sandbox) is down, the fault is simply not injected.
            await sandbox.fault(fault).then(
              () => stats.faults++,
              () => undefined,
            );
          }
          const { runId, ...call } = calls[i];
          let tries = 0;
          await whileDown(`submit ${call.callId}`, async () => {
            if (tries++ > 0) stats.resubmits++;
            const res = await api.call(agentKey, runId, { ...call, turn: 1 }, 1);
            if (res.status !== 200 && res.status !== 202) throw new Error(`HTTP ${res.status}: ${JSON.stringify(res.body)}`);
          });
        }
      };
      const killer = async () => {
        for (const delay of killDelays) {
          await new Promise((r) => setTimeout(r, delay));
          await started!.signalGroup('SIGKILL');
          const t = Date.now();
          // Ready comes after every interrupted operation was resumed: minutes on a busy two-core machine.
          started = await npmStart(env, { readyWithinMs: 300_000 });
          stats.restartsMs.push(Date.now() - t);
        }
      };
      await Promise.all([killer(), ...Array.from({ length: CONCURRENCY }, submitter)]);

      // Every operation settles: reported, or (what must not happen) flagged for a person.
      const ops = [];
      for (const { runId, callId } of calls) {
        const operationId = operationIdFor(runId, callId);
        ops.push(
          await whileDown(`settle ${operationId}`, () =>
            api.until(
              `${operationId} to settle`,
              () => api.operation(reviewerKey, operationId),
              (op) => op.state === 'reported' || Boolean(op.review?.required && op.envelope),
              180_000,
            ),
          ),
        );
      }

      const ledger: LedgerEntry[] = (await sandbox.ledger()).filter((e) => e.kind === 'charge');
      const chargesByKey = new Map<string, LedgerEntry[]>();
      for (const entry of ledger) chargesByKey.set(entry.idempotencyKey!, [...(chargesByKey.get(entry.idempotencyKey!) ?? []), entry]);
      const duplicated = [...chargesByKey.values()].filter((entries) => entries.length > 1).length;
      const byKey = new Map(ops.map((op) => [op.idempotencyKey as string, op]));
      // Lost: a charge the upstream made that the model was not told of (no such operation, or not succeeded with it).
      const lost = ledger.filter((entry) => {
        const op = byKey.get(entry.idempotencyKey!);
        return op?.envelope?.status !== 'succeeded' || op.envelope.result?.id !== entry.id;
      });
      // And the converse: a success the upstream has no charge for.
      const phantom = ops.filter((op) => op.envelope?.status === 'succeeded' && !chargesByKey.has(op.idempotencyKey));
      const toPerson = ops.filter((op) => op.review?.required);
      const outcomes: Record<string, number> = {};
      for (const op of ops)
        outcomes[`${op.envelope?.status}/${op.envelope?.code ?? '-'}`] =
          (outcomes[`${op.envelope?.status}/${op.envelope?.code ?? '-'}`] ?? 0) + 1;
      console.log(
        `chaos${where} (seed ${SEED}): ${CHARGES} charges, ${KILLS} SIGKILLs, ${stats.faults} faults injected, ${stats.resubmits} resubmissions; ` +
          `${ledger.length} charges in the ledger, ${duplicated} duplicated, ${lost.length} lost, ${phantom.length} phantom, ${toPerson.length} sent to a person; ` +
          `outcomes ${JSON.stringify(outcomes)}; restarts ${stats.restartsMs.map((ms) => (ms / 1000).toFixed(1)).join(' ')} s; ${((Date.now() - begun) / 1000).toFixed(0)} s in all`,
      );
      if (TEMPLATE) console.log(`aws (summed over ${KILLS + 1} processes): ${JSON.stringify(awsActivity(dataDir))}`);
      // What a failure needs to be understood: each wrong operation's lifecycle, beside the upstream's ledger.
      for (const op of [...lost.map((e) => byKey.get(e.idempotencyKey!)), ...phantom]) {
        if (!op) continue;
        const events = (await api.trace(reviewerKey, op.runId)).filter((e) => e.operationId === op.operationId);
        const charges = chargesByKey.get(op.idempotencyKey)?.map((e) => `${e.id} at ${e.at}`) ?? [];
        console.log(
          `${op.operationId} (${op.envelope?.status}/${op.envelope?.code ?? '-'}; ledger: ${charges.join(', ') || 'none'}):\n` +
            events
              .map(
                (e) => `  ${e.at} ${e.type} ${e.from ?? ''}${e.to ? `->${e.to}` : ''} ${e.attempt ?? ''} ${JSON.stringify(e.detail ?? {})}`,
              )
              .join('\n'),
        );
      }
      const again = `(rerun with CHAOS_SEED=${SEED})`;
      expect(duplicated, `duplicated charges ${again}`).toBe(0);
      expect(
        lost.map((e) => e.idempotencyKey),
        `lost charges ${again}`,
      ).toEqual([]);
      expect(
        phantom.map((op) => op.operationId),
        `successes without a charge ${again}`,
      ).toEqual([]);
      expect(
        toPerson.map((op) => `${op.operationId}: ${op.review.reason}`),
        `charges sent to a person ${again}`,
      ).toEqual([]);
      expect(stats.restartsMs).toHaveLength(KILLS);
    },
    Math.max(900_000, CHARGES * 5_000),
  );
});
