import type { TestStack } from './stack';

/** An approver decides through the runner's approval link, as a person would from the notification. */
export async function decideApproval(stack: TestStack, operationId: string, decision: 'approve' | 'reject'): Promise<void> {
  const { api, keys } = stack;
  const approval = await api.until(
    `an approval for ${operationId}`,
    async () =>
      ((await api.request('GET', '/v1/approvals?status=pending', { key: keys.approver })).body.approvals as any[]).find(
        (a) => a.operationId === operationId,
      ),
    (found) => Boolean(found),
  );
  const sig = new URL(approval.url).searchParams.get('sig');
  const res = await api.request('POST', `/v1/approvals/${approval.approvalId}`, { body: { decision, sig } });
  if (res.status !== 200) throw new Error(`approval ${decision}: ${res.status} ${JSON.stringify(res.body)}`);
}
