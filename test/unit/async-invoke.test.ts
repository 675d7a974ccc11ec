import { describe, expect, it } from 'vitest';
import { ASYNC_POLICY, invokeAsync } from '../../local/template/async-invoke';
import { LambdaError } from '../../local/template/lambda-pool';

/** A clock that moves only when the policy sleeps: the delays it chose, in order. */
function fakeTime() {
  let now = 0;
  const delays: number[] = [];
  return {
    delays,
    now: () => now,
    sleep: async (ms: number) => {
      delays.push(ms);
      now += ms;
    },
  };
}

const throttled = () => new LambdaError('TooManyRequestsException', 'Rate Exceeded.', false);

describe("Lambda's asynchronous invocation policy", () => {
  it('retries a throttled event with backoff from 1 s, doubling to 5 min, and runs it once it fits', async () => {
    const time = fakeTime();
    let tries = 0;
    const outcome = await invokeAsync(
      async () => {
        tries += 1;
        if (tries <= 10) throw throttled();
      },
      new AbortController().signal,
      () => undefined,
      time.sleep,
      time.now,
    );
    expect(outcome).toEqual({ result: 'ran', throttles: 10, tries: 11 });
    expect(time.delays).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 64_000, 128_000, 256_000, 300_000]);
  });

  it('drops a throttled event once it would be older than 6 hours', async () => {
    const time = fakeTime();
    const lines: string[] = [];
    const outcome = await invokeAsync(
      async () => {
        throw throttled();
      },
      new AbortController().signal,
      (l) => lines.push(l),
      time.sleep,
      time.now,
    );
    expect(outcome.result).toBe('dropped');
    expect(time.now()).toBeLessThanOrEqual(ASYNC_POLICY.maxEventAgeMs);
    expect(lines).toEqual(['async invocation dropped: the event is older than its maximum age']);
  });

  it('retries a function error twice, one and then two minutes later', async () => {
    const time = fakeTime();
    const outcome = await invokeAsync(
      async () => {
        throw new LambdaError('Error', 'boom');
      },
      new AbortController().signal,
      () => undefined,
      time.sleep,
      time.now,
    );
    expect(outcome).toEqual({ result: 'failed', throttles: 0, tries: 3 });
    expect(time.delays).toEqual([60_000, 120_000]);
  });

  it('stops retrying when the stack stops', async () => {
    const stop = new AbortController();
    const outcome = await invokeAsync(
      async () => {
        stop.abort();
        throw throttled();
      },
      stop.signal,
      () => undefined,
    );
    expect(outcome).toEqual({ result: 'dropped', throttles: 0, tries: 1 });
  });
});
