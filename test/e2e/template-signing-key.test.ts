import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CfnTemplate } from '../../local/template/assembly';
import { startTestStack, type TestStack } from '../support/stack';
import { handlerMode } from '../support/target';

type Resource = { Type: string; Properties: Record<string, any>; DependsOn?: string[] };

/**
 * The template as a stack deployed before the signing key moved out had it: the functions read the key from the
 * principals document (no SIGNING_KEY_SECRET_ARN), and there is no seed.
 */
function beforeTheKeyMovedOut(template: CfnTemplate): void {
  const seeds = Object.entries(template.Resources)
    .filter(([, r]) => r.Type === 'Custom::ToolRunnerSigningKeySeed')
    .map(([id]) => id);
  expect(seeds).toHaveLength(1);
  for (const id of seeds) delete template.Resources[id];
  for (const resource of Object.values(template.Resources) as Resource[]) {
    if (resource.DependsOn) resource.DependsOn = resource.DependsOn.filter((d) => !seeds.includes(d));
    if (resource.Type === 'AWS::Lambda::Function') delete resource.Properties.Environment?.Variables?.SIGNING_KEY_SECRET_ARN;
  }
}

const bigCharge = { amount: 75_000, currency: 'USD', customer: 'cus_big', description: 'annual plan' };

// Template mode only: the stack from the synthesized template, updated to the current template over the same data.
describe.runIf(handlerMode === 'template')('an approval link made before the signing key moved out decides after the update', () => {
  let stack: TestStack;
  let phase: 'before' | 'after' = 'before';
  beforeAll(async () => {
    stack = await startTestStack({ editTemplate: (t) => (phase === 'before' ? beforeTheKeyMovedOut(t) : undefined) });
  }, 240_000);
  afterAll(async () => stack?.stop());

  it('the seed copies the old approvalSecret into the new key, once; the old link approves the call', async () => {
    const { keys } = stack;
    const runId = await stack.api.createRun(keys.agent);
    const submitted = await stack.api.call(keys.agent, runId, { callId: 'call_upgrade', name: 'charge_card', arguments: bigCharge });
    expect(submitted.body.state).toBe('awaiting_approval');
    const approval = await stack.api.until(
      'the approval to be listed',
      async () =>
        (await stack.api.request('GET', '/v1/approvals?status=pending', { key: keys.approver })).body.approvals.find(
          (a: { operationId: string }) => a.operationId === submitted.body.operationId,
        ),
      (found) => found !== undefined,
      15_000,
    );
    const sig = new URL(approval.url).searchParams.get('sig');

    // The update: the current template over the same tables and data directory.
    phase = 'after';
    await stack.restart!();
    const created = JSON.parse(readFileSync(join(stack.dataDir, 'custom-resources.json'), 'utf8'));
    expect(Object.keys(created)).toEqual([expect.stringMatching(/SigningKeySeed/)]);
    const stored = readdirSync(join(stack.dataDir, 'secrets'));
    expect(stored).toHaveLength(1);
    const versions = JSON.parse(readFileSync(join(stack.dataDir, 'secrets', stored[0]), 'utf8')).versions;
    const config = JSON.parse(readFileSync(stack.configPath, 'utf8'));
    expect(versions.find((v: { stages: string[] }) => v.stages.includes('AWSCURRENT')).text).toBe(
      JSON.stringify({ approvalSecret: config.approvalSecret }),
    );

    const decided = await stack.api.request('POST', `/v1/approvals/${approval.approvalId}`, { body: { decision: 'approve', sig } });
    expect(decided.status).toBe(200);
    const op = await stack.api.until(
      'reported',
      () => stack.api.operation(keys.agent, submitted.body.operationId),
      (o) => o.state === 'reported',
      60_000,
    );
    expect(op.envelope.status).toBe('succeeded');
    expect(await stack.sandbox.ledger()).toHaveLength(1);

    // A second start over the same data creates the seed no more: the key stays as it is.
    await stack.restart!();
    expect(JSON.parse(readFileSync(join(stack.dataDir, 'secrets', stored[0]), 'utf8')).versions).toEqual(versions);
  }, 300_000);
});
