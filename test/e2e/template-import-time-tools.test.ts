import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../support/stack';
import { handlerMode } from '../support/target';

/**
 * Template mode only: a tools module whose top level, at import, tries to read the config secret (the key that
 * signs approval links) and to write the operations table (test/fixtures/import-time-tools.ts). Only `Tools`
 * loads it, whose role IAM refuses both; every function that holds the runner's keys never imports it.
 */
describe.runIf(handlerMode === 'template')('no user code where the runner’s keys are (template mode)', () => {
  const dir = join(tmpdir(), 'toolrunner-import-time-tools');
  const nonce = randomBytes(6).toString('hex');
  let stack: TestStack;
  beforeAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    stack = await startTestStack({ toolsEntry: 'test/fixtures/import-time-tools.ts' });
    // The module waits at import for what to try: this stack's secret and operations table.
    const target = { nonce, secretArn: stack.configSecretArn!, operationsTable: stack.tables!.operations };
    writeFileSync(join(dir, `target.${nonce}`), JSON.stringify(target));
    renameSync(join(dir, `target.${nonce}`), join(dir, 'target.json'));
  }, 240_000);
  afterAll(async () => {
    await stack?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const markers = () =>
    existsSync(dir)
      ? readdirSync(dir)
          .filter((f) => f.startsWith(`${nonce}-`))
          .map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')) as { function: string; secret: string; write: string })
      : [];

  it('the import-time reads and writes are refused to Tools, and no other function imports the module', async () => {
    const { api, keys } = stack;
    const runId = await api.createRun(keys.agent);
    // A call that needs approval (the approval predicate, cost and approval lines answered by Tools) and one that runs.
    const big = await api.call(keys.agent, runId, {
      callId: 'call_big',
      name: 'charge_card',
      arguments: { amount: 75_000, currency: 'USD', customer: 'cus_import', description: 'annual plan' },
    });
    expect(big.status).toBe(202);
    const small = await api.call(keys.agent, runId, {
      callId: 'call_small',
      name: 'charge_card',
      arguments: { amount: 1200, currency: 'USD', customer: 'cus_import', description: 'monthly' },
    });
    expect(small.body).toMatchObject({ status: 'succeeded', result: { amount: 1200 } });
    const pending = await api.until(
      'the approval to be listed',
      () => api.request('GET', '/v1/approvals?status=pending', { key: keys.approver }),
      (r) => r.body.approvals.some((a: { operationId: string }) => a.operationId === big.body.operationId),
    );
    const approval = pending.body.approvals.find((a: { operationId: string }) => a.operationId === big.body.operationId);
    // The describeForApproval lines were stored at validation; the Api shows them without the tools module.
    expect(approval.summary?.length).toBeGreaterThan(0);

    const seen = await api.until(
      'the import-time markers',
      async () => markers(),
      (m) => m.length > 0,
    );
    expect(
      seen.every((m) => m.function.includes('ToolsFunction')),
      JSON.stringify(seen),
    ).toBe(true);
    for (const m of seen) expect(m).toMatchObject({ secret: 'AccessDeniedException', write: 'AccessDeniedException' });
    const refused = stack.denials!.filter((d) => d.session.includes('ToolsFunction'));
    expect(refused).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ action: 'secretsmanager:GetSecretValue', resource: stack.configSecretArn }),
        expect.objectContaining({
          action: 'dynamodb:PutItem',
          resource: expect.stringMatching(new RegExp(`:table/${stack.tables!.operations}$`)),
        }),
      ]),
    );
    // Nothing else was refused to anyone: the runner's own functions did their work with their own roles.
    expect(stack.denials!.length).toBe(refused.length);
  });
});
