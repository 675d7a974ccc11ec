import { GetExecutionHistoryCommand, SFNClient } from '@aws-sdk/client-sfn';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ErrorNames } from '../../functions/core/errors';
import { readDefinition } from '../../statemachines/definition';
import { startTestStack, type TestStack } from '../support/stack';
import { isEmbedded } from '../support/target';

// Always the deployed bundles, whatever TARGET says: this is where a name lost to minification shows.
let stack: TestStack;
beforeAll(async () => {
  if (isEmbedded) stack = await startTestStack({ handlers: 'bundled' });
});
afterAll(async () => stack?.stop());

type Catcher = { ErrorEquals: string[]; Next: string };
/** From the ASL as it is: the task-token wait, where its Catch sends a rejection, and where anything else. */
function approvalRoutes() {
  const states = Object.entries(
    (JSON.parse(readDefinition()) as { States: Record<string, { Resource?: string; Catch?: Catcher[] }> }).States,
  );
  const [wait, spec] = states.find(([, s]) => String(s.Resource).endsWith('.waitForTaskToken'))!;
  const onRejected = spec.Catch!.find((c) => c.ErrorEquals.includes(ErrorNames.ApprovalRejected))!.Next;
  const onAnything = spec.Catch!.find((c) => c.ErrorEquals.includes('States.ALL'))?.Next;
  return { wait, onRejected, onAnything };
}

const bigCharge = { amount: 75_000, currency: 'USD', customer: 'cus_big', description: 'annual plan' };

/** The states one execution entered, in order, from the local Step Functions endpoint's history. */
async function statesEntered(operationId: string): Promise<string[]> {
  const sfn = new SFNClient({ endpoint: process.env.AWS_ENDPOINT_URL_SFN });
  try {
    const executionArn = `${stack.stateMachineArn!.replace(':stateMachine:', ':execution:')}:${operationId}`;
    const { events = [] } = await sfn.send(new GetExecutionHistoryCommand({ executionArn }));
    return events.flatMap((e) =>
      e.type?.endsWith('StateEntered') && e.stateEnteredEventDetails?.name ? [e.stateEnteredEventDetails.name] : [],
    );
  } finally {
    sfn.destroy();
  }
}

describe.runIf(isEmbedded)('the deployed bundles on the embedded stack', () => {
  it("a rejection sent by the bundled API is caught by the ASL's own Catch, by name", async () => {
    const { api, keys } = stack;
    const runId = await api.createRun(keys.agent);
    const submitted = await api.call(keys.agent, runId, { callId: 'call_named', name: 'charge_card', arguments: bigCharge });
    expect(submitted.status).toBe(202);
    const opId = submitted.body.operationId as string;
    const list = await api.request('GET', '/v1/approvals?status=pending', { key: keys.approver });
    const approval = list.body.approvals.find((a: { operationId: string }) => a.operationId === opId);
    const sig = new URL(approval.url).searchParams.get('sig');
    const decided = await api.request('POST', `/v1/approvals/${approval.approvalId}`, { body: { decision: 'reject', sig } });
    expect(decided.status).toBe(200);
    await api.until(
      'reported',
      () => api.operation(keys.agent, opId),
      (o) => o.state === 'reported',
    );

    // The ApprovalRejectedError Catch matched: the wait goes where that Catch says. An error name lost to
    // minification would fall to the States.ALL catch (or fail the execution) instead.
    const { wait, onRejected, onAnything } = approvalRoutes();
    expect(onRejected).not.toBe(onAnything);
    const entered = await api.until(
      'the execution to leave the wait',
      () => statesEntered(opId),
      (s) => s.lastIndexOf(wait) >= 0 && s.length > s.lastIndexOf(wait) + 1,
    );
    expect(entered[entered.lastIndexOf(wait) + 1], entered.join(' > ')).toBe(onRejected);
  });
});
