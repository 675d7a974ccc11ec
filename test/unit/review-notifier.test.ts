import { describe, expect, it } from 'vitest';
import { consoleChannel, makeNotifier } from '../../functions/adapters/notifier';

describe('review notification', () => {
  it('prints one line naming the operation, the reason and where to resolve it', async () => {
    const lines: string[] = [];
    await makeNotifier([consoleChannel((l) => lines.push(l))]).reviewRequired({
      operationId: 'op_1',
      runId: 'run_1',
      toolName: 'send_email',
      reason: 'the tool cannot be replayed safely',
    });
    expect(lines).toEqual([
      'review needed: send_email op_1 (run run_1): the tool cannot be replayed safely. Resolve with POST /v1/operations/op_1/resolve or in the console at /console/reviews.',
    ]);
  });
});
