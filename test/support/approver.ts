import type { TestStack } from './stack';

/**
 * A person at the approval links: decides every pending approval of `runId` with `decide`, until stopped.
 * Runs beside an agent that blocks waiting for decisions, as a real approver would.
 */
export function startApprover(
  stack: TestStack,
  runId: () => string | undefined,
  decide: (approval: { toolName: string; arguments: any }) => 'approve' | 'reject',
) {
  let stopped = false;
  const decided: { toolName: string; arguments: any; decision: string }[] = [];
  const loop = (async () => {
    while (!stopped) {
      const list = await stack.api.request('GET', '/v1/approvals?status=pending', { key: stack.keys.approver });
      for (const approval of (list.body.approvals ?? []) as any[]) {
        if (approval.runId !== runId()) continue;
        const decision = decide(approval);
        const sig = new URL(approval.url).searchParams.get('sig');
        const res = await stack.api.request('POST', `/v1/approvals/${approval.approvalId}`, { body: { decision, sig } });
        if (res.status === 200) decided.push({ toolName: approval.toolName, arguments: approval.arguments, decision });
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
  return {
    decided,
    stop: async () => {
      stopped = true;
      await loop;
    },
  };
}
