import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DescribeExecutionCommand, ExecutionDoesNotExist, SFNClient } from '@aws-sdk/client-sfn';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { executionNameOf } from '../../functions/steps/deps';
import type { CfnTemplate } from '../../local/template/assembly';
import { shape, startTestStack, type TestStack } from '../support/stack';
import { handlerMode } from '../support/target';

type Resource = { Type: string; Properties: Record<string, any> };

/** The logical id of the function the HTTP API's integration invokes: the API Lambda. */
function apiFunctionId(template: CfnTemplate): string {
  const integration = Object.values(template.Resources).find((r) => r.Type === 'AWS::ApiGatewayV2::Integration') as Resource;
  return integration.Properties.IntegrationUri['Fn::GetAtt'][0];
}

/** Removes one action from every policy statement attached to a function's role (a copy of the template). */
function removeAction(template: CfnTemplate, functionId: string, action: string): void {
  const roleId = (template.Resources[functionId] as Resource).Properties.Role['Fn::GetAtt'][0];
  let removed = 0;
  for (const resource of Object.values(template.Resources) as Resource[]) {
    if (resource.Type !== 'AWS::IAM::Policy' || !resource.Properties.Roles.some((r: { Ref: string }) => r.Ref === roleId)) continue;
    for (const statement of resource.Properties.PolicyDocument.Statement) {
      const actions = [statement.Action].flat();
      if (!actions.includes(action)) continue;
      statement.Action = actions.filter((a) => a !== action);
      removed += 1;
    }
  }
  if (!removed) throw new Error(`${functionId}'s role has no ${action} to remove`);
}

const bigCharge = { amount: 75_000, currency: 'USD', customer: 'cus_big', description: 'annual plan' };

// Template mode only: it builds the stack from the synthesized template, which global setup synthesizes for TARGET=template.
describe.runIf(handlerMode === 'template')('IAM from the template: the API function without states:StartExecution', () => {
  let stack: TestStack;
  let apiFunctionName: string;
  beforeAll(async () => {
    stack = await startTestStack({
      editTemplate: (template) => {
        const id = apiFunctionId(template);
        removeAction(template, id, 'states:StartExecution');
        apiFunctionName = id;
      },
    });
  });
  afterAll(async () => stack?.stop());

  it('still runs a read (its synchronous Express start is a different action, still granted)', async () => {
    const { api, keys } = stack;
    const runId = await api.createRun(keys.agent);
    const reply = await api.call(keys.agent, runId, { callId: 'call_read', name: 'get_order', arguments: { orderId: 'ord_1' } });
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ status: 'succeeded' });
    expect(stack.denials).toEqual([]);
  });

  it('a call that needs the Standard machine: StartExecution is denied as on AWS, the API answers a clean 500, nothing is half-written', async () => {
    const { api, keys } = stack;
    const runId = await api.createRun(keys.agent);
    const reply = await api.call(keys.agent, runId, { callId: 'call_big', name: 'charge_card', arguments: bigCharge });

    // The caller gets the API's own error shape, no stack trace.
    expect(reply.status).toBe(500);
    expect(reply.body).toEqual({ error: { code: 'internal', message: 'internal error' } });
    // The IAM check refused exactly that action, to that function, on the Standard state machine.
    expect(stack.denials).toEqual([
      expect.objectContaining({
        action: 'states:StartExecution',
        resource: stack.stateMachineArn,
        session: expect.stringContaining(apiFunctionName),
      }),
    ]);
    // The function saw AWS's AccessDeniedException (its log, where CloudWatch Logs would have it).
    const logs = join(stack.dataDir, 'logs');
    const apiLog = readdirSync(logs).find((f) => f.startsWith(apiFunctionName))!;
    // Its log reaches the file after the reply may have: wait for the line rather than read once.
    await expect
      .poll(() => readFileSync(join(logs, apiLog), 'utf8'), { timeout: 30_000, interval: 100 })
      .toContain('AccessDeniedException');

    // The operation was recorded (validated, waiting to be started) and no execution exists for it.
    const events = await api.trace(keys.agent, runId);
    const operationId = events.find((e) => e.operationId)!.operationId!;
    expect(shape(events, operationId)).toEqual(['operation.proposed', 'policy.decision', 'proposed>validated']);
    const op = await api.operation(keys.agent, operationId);
    expect(op).toMatchObject({ state: 'validated', attempts: 0 });
    const sfn = new SFNClient({});
    const executionArn = `${stack.stateMachineArn!.replace(':stateMachine:', ':execution:')}:${executionNameOf({ operationId, resumes: 0 })}`;
    await expect(sfn.send(new DescribeExecutionCommand({ executionArn }))).rejects.toBeInstanceOf(ExecutionDoesNotExist);

    // The same call again is the same operation, never a second one.
    const again = await api.call(keys.agent, runId, { callId: 'call_big', name: 'charge_card', arguments: bigCharge });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.operationId ?? again.body.logical_operation_id).toBe(operationId);

    // The record is enough to go on: after a restart the operation is resumed from it and waits for its approver.
    const recovered = await stack.restart!();
    expect(recovered).toContain(operationId);
    await api.until(
      'awaiting approval',
      () => stack.api.operation(keys.agent, operationId),
      (o) => o.state === 'awaiting_approval',
    );
    // Its approver is told through the stack's links topic (recorded here, delivered nowhere), with a link to the
    // local API; the notices topic gets a link-free notice.
    const published = await stack.api.until(
      'the approver notice',
      // The link names the approval (apr_ with the operation's suffix); the notice names the operation.
      async () => stack.published!.filter((m) => [operationId, operationId.replace(/^op_/, 'apr_')].some((id) => m.message.includes(id))),
      (messages) => messages.some((m) => m.subject === 'Approval needed: charge_card'),
    );
    const email = published.find((m) => m.subject === 'Approval needed: charge_card')!.message;
    expect(email).toContain(`${stack.apiUrl}/v1/approvals/`);
    // It reads as the console does: the arguments and their hash, the link last.
    for (const line of ['Arguments:', '  amount: 75000', '  customer: cus_big', `Arguments hash ${op.inputHash}`])
      expect(email).toContain(line);
    expect(email.trimEnd().split('\n').pop()).toMatch(/\/v1\/approvals\/apr_/);
    for (const notice of published.filter((m) => m.subject !== 'Approval needed: charge_card')) {
      expect(notice.message).not.toContain('/v1/approvals/apr_');
    }
    // A restart of the whole template stack: minutes on a busy machine.
  }, 240_000);
});
