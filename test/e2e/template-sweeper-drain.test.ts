import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { LEASE_MARGIN_MS } from '../../functions/core/leases';
import type { RunRecord } from '../../functions/core/model';
import type { CfnTemplate } from '../../local/template/assembly';
import { startStack, type Stack } from '../../local/stack';
import { handlerMode } from '../support/target';
import { lostOperations } from '../support/records';

/**
 * The sweeper end to end on the stack built from the synthesized template: `SWEEP_TEMPLATE_OPERATIONS`
 * (default 1,000) operations lost at once, drained by the scheduled sweeper bundle alone (its schedules at
 * their one-minute rate, one per part, invoking the function with its template timeout, reserved concurrency
 * and role through the IAM check). The Standard machine is replaced by one that only succeeds, so each
 * resumption's StartExecution is real and counted but runs nothing: the operations stay active under the
 * lease their resumption took, and a second resumption of one while that lease is live would show.
 */
const OPERATIONS = Number(process.env.SWEEP_TEMPLATE_OPERATIONS ?? 1000);
const DRAIN_DEADLINE_MS = 8 * 60_000;

type Resource = { Type: string; Properties: Record<string, unknown> };

/** The Standard lifecycle as a machine that succeeds at once: resumptions start it, nothing runs. */
function withIdleStandard(template: CfnTemplate): void {
  for (const r of Object.values(template.Resources) as Resource[])
    if (r.Type === 'AWS::StepFunctions::StateMachine' && r.Properties.StateMachineType !== 'EXPRESS') {
      r.Properties.DefinitionString = JSON.stringify({ StartAt: 'Done', States: { Done: { Type: 'Succeed' } } });
      delete r.Properties.DefinitionSubstitutions;
    }
}

describe.runIf(handlerMode === 'template')('the scheduled sweeper drains lost operations (template)', () => {
  let stack: Stack | undefined;
  let dataDir: string;
  /** Each execution's start as the engine ended it: name (`<operationId>-r<n>`) and when. */
  const executions: { name: string; at: number }[] = [];
  const sweeperStarts: number[] = [];
  let sweeperInvocations = 0;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'toolrunner-drain-'));
    const configPath = join(dataDir, 'config.json');
    writeFileSync(
      configPath,
      JSON.stringify({
        principals: [{ id: 'agent', key: `tr_${randomBytes(18).toString('base64url')}`, roles: ['agent'], tools: '*' }],
        approvalSecret: randomBytes(32).toString('base64url'),
      }),
    );
    stack = await startStack({
      dataDir,
      configPath,
      dynamoEndpoint: inject('dynamoEndpoint'),
      tablePrefix: `s${randomBytes(5).toString('hex')}`,
      ownsTables: true,
      handlers: 'template',
      editTemplate: withIdleStandard,
      meter: {
        invoked: (fn) => {
          if (/Sweeper/.test(fn.logicalId)) sweeperInvocations++;
        },
        executed: (e) => executions.push({ name: e.executionArn.split(':').pop() ?? '', at: Date.now() }),
        awsCall: (call) => {
          if (call.service === 'states' && call.operation === 'StartExecution' && /Sweeper/.test(call.session))
            sweeperStarts.push(Date.now());
        },
      },
    });
  }, 300_000);
  afterAll(async () => {
    await stack?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it(`resumes ${OPERATIONS} operations lost at once, each once while its lease is live`, { timeout: 900_000 }, async () => {
    const { store } = stack!.deps;
    const lostAt = new Date(Date.now() - 5 * 60_000).toISOString();
    const ops = lostOperations(OPERATIONS, lostAt);
    // Written as the runner writes them (record, trace block, watch entry), with their executions already gone.
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < ops.length) {
          const op = ops[next++];
          await store.createOperation({
            run: { runId: 'run_drain' } as RunRecord,
            runChange: { kind: 'none' },
            op,
            events: [{ type: 'operation.proposed' }],
          });
        }
      }),
    );
    const seeded = Date.now();
    const ids = new Set(ops.map((op) => op.operationId));
    const resumedOnce = () => new Set(executions.map((e) => e.name).filter((n) => n.endsWith('-r1'))).size;

    for (const deadline = seeded + DRAIN_DEADLINE_MS; resumedOnce() < OPERATIONS && Date.now() < deadline; )
      await new Promise((r) => setTimeout(r, 250));
    const drained = Date.now();
    const firstStart = Math.min(...sweeperStarts);
    console.log(
      `template sweeper drain: ${resumedOnce()} of ${OPERATIONS} operations resumed; ` +
        `${((drained - seeded) / 1000).toFixed(1)} s after they were lost (the schedule's first tick included), ` +
        `${((drained - firstStart) / 1000).toFixed(1)} s from the sweeper's first StartExecution to its last; ${sweeperInvocations} sweeper invocations`,
    );

    expect(resumedOnce()).toBe(OPERATIONS);
    // Every execution is of an operation lost here, and each one's first resumption is its only one so far
    // unless that resumption's lease had passed.
    const byOp = new Map<string, number[]>();
    for (const e of executions) {
      const [opId] = e.name.split('-r');
      expect(ids.has(opId), e.name).toBe(true);
      byOp.set(opId, [...(byOp.get(opId) ?? []), e.at]);
    }
    const early = [...byOp].filter(([, times]) => times.some((t, i) => i > 0 && t - times[i - 1] < LEASE_MARGIN_MS));
    expect(early).toEqual([]);
    // The records agree: each resumed, under a lease ahead of its resumption.
    const sample = await store.getOperation(ops[OPERATIONS - 1].operationId);
    expect(sample).toMatchObject({ state: 'validated' });
    expect(sample!.resumes).toBeGreaterThanOrEqual(1);
    expect(sweeperStarts.length).toBe(executions.length);
  });
});
