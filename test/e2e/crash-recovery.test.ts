import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../local/dynamodb-local';
import { Api, Sandbox, shape } from '../support/stack';
import { agentAndReviewerDataDir, npmStart, type NpmStarted } from '../support/npm-start';
import { handlerMode, isEmbedded } from '../support/target';

const { dataDir, configPath, agentKey, reviewerKey, remove } = agentAndReviewerDataDir('crash');

let started: NpmStarted | undefined;

const start = async (ports: { api: number; sandbox: number }) => {
  started = await npmStart({
    PORT: String(ports.api),
    SANDBOX_PORT: String(ports.sandbox),
    TOOLRUNNER_DATA_DIR: dataDir,
    TOOLRUNNER_CONFIG: configPath,
  });
  return started;
};

afterAll(async () => {
  if (started?.alive()) await started.signalGroup('SIGKILL').catch(() => undefined);
  remove();
});

// Kills and restarts `npm start` itself, so it needs the embedded stack.
describe.runIf(isEmbedded)('crash after the write', () => {
  it('SIGKILL while a charge is in flight; after a restart the operation is reported and the ledger has one charge', async () => {
    const ports = { api: await freePort(), sandbox: await freePort() };
    // npm start says which handlers it runs (TOOLRUNNER_HANDLERS, from the target) before it is ready.
    expect((await start(ports)).output()).toMatch(new RegExp(`handlers: ${handlerMode}\n(.*\n)*ready: api=`));
    const api = new Api(`http://127.0.0.1:${ports.api}`);
    const sandbox = new Sandbox(`http://127.0.0.1:${ports.sandbox}`);
    const runId = await api.createRun(agentKey);
    // The charge commits, then the response is held: the runner is killed while it waits.
    await sandbox.fault({ route: 'POST /v1/charges', mode: 'commit_then_timeout', delayMs: 60_000 });
    const submitted = await api.call(
      agentKey,
      runId,
      { callId: 'call_crash', name: 'charge_card', arguments: { amount: 4200, currency: 'EUR', customer: 'cus_9' } },
      0,
    );
    expect(submitted.status).toBe(202);
    const opId = submitted.body.operationId as string;
    await api.until(
      'the charge to commit',
      () => sandbox.ledger(),
      (l) => l.length === 1,
    );
    const before = await api.operation(reviewerKey, opId);
    expect(before).toMatchObject({ state: 'executing', attempts: 1 });

    await started!.signalGroup('SIGKILL');
    const restarted = await start(ports);
    expect(restarted.output()).toContain('recovered 1 operation(s)');

    const after = await api.until(
      'the operation to be reported',
      () => api.operation(reviewerKey, opId),
      (op) => op.state === 'reported',
      60_000,
    );
    expect(after.envelope).toMatchObject({ status: 'succeeded', result: { amount: 4200, currency: 'EUR' } });
    expect(after.idempotencyKey).toBe(before.idempotencyKey);
    const ledger = await sandbox.ledger();
    expect(ledger).toHaveLength(1);
    expect(ledger[0]).toMatchObject({ kind: 'charge', idempotencyKey: before.idempotencyKey });

    const events = await api.trace(agentKey, runId);
    expect(shape(events)).toEqual([
      'operation.proposed',
      'policy.decision',
      'proposed>validated',
      'validated>executing',
      'attempt.started',
      'executing>outcome_unknown',
      'reconcile.started',
      'reconcile.finished',
      'outcome_unknown>recorded',
      'result.recorded',
      'recorded>reported',
      'result.reported',
    ]);
    expect(events.find((e) => e.from === 'executing' && e.to === 'outcome_unknown')!.detail).toEqual({ reason: 'attempt_lost' });
    expect(events.find((e) => e.type === 'reconcile.finished')!.detail).toMatchObject({ result: 'found' });

    // SIGTERM to npm start: a clean shutdown and exit code 0.
    const proc = restarted.child;
    const code = new Promise<number | null>((r) => proc.once('exit', (c) => r(c)));
    proc.kill('SIGTERM');
    expect(await code).toBe(0);
    expect(restarted.output()).toContain('SIGTERM: shutting down');
  }, 240_000);
});
