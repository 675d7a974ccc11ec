import { Readable } from 'node:stream';
import { SFNClient } from '@aws-sdk/client-sfn';
import { describe, expect, it } from 'vitest';
import { memoryMetrics } from '../../functions/adapters/metrics';
import { sfnLifecycle } from '../../functions/adapters/sfn-lifecycle';
import { MetricName } from '../../functions/core/metric-names';

/** A Step Functions endpoint that throttles every request, as AWS answers it. */
function throttlingClient(): { client: SFNClient; requests: () => number } {
  let requests = 0;
  const client = new SFNClient({
    region: 'us-east-1',
    credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
    maxAttempts: 3,
    requestHandler: {
      handle: async () => {
        requests += 1;
        return {
          // An HTTP response as the SDK's handlers return it (it is told apart by shape).
          response: {
            statusCode: 400,
            headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-errortype': 'ThrottlingException' },
            body: Readable.from([Buffer.from('{"__type":"ThrottlingException","message":"Rate exceeded"}')]),
          },
        };
      },
    } as never,
  });
  return { client, requests: () => requests };
}

describe('StatesApiThrottled: the runner counts Step Functions throttling itself', () => {
  it('counts each refused attempt inside the SDK’s retries, by API, in its own metrics', async () => {
    const { client, requests } = throttlingClient();
    const metrics = memoryMetrics();
    const lifecycle = sfnLifecycle(client, 'arn:aws:states:us-east-1:1:stateMachine:m', undefined, metrics);
    await expect(lifecycle.start({ operationId: 'op_1', next: 'validate' }, 'n')).rejects.toMatchObject({ name: 'ThrottlingException' });
    expect(requests()).toBe(3);
    expect(metrics.snapshot()).toEqual([{ name: MetricName.statesApiThrottled, dimensions: { api: 'StartExecution' }, value: 3 }]);
  }, 30_000);
});
