import { LambdaError } from './lambda-pool';

/** Lambda's asynchronous invocation policy (its defaults; the template sets no `EventInvokeConfig`). */
export const ASYNC_POLICY = {
  /** A throttled event (or one Lambda failed to run) is retried with backoff from 1 s up to 5 min ... */
  throttleBackoffMs: { first: 1_000, max: 300_000 },
  /** ... for as long as the event is younger than this. */
  maxEventAgeMs: 6 * 3_600_000,
  /** A function error is retried twice, one minute and then two minutes later. */
  errorRetryDelaysMs: [60_000, 120_000],
} as const;

export interface AsyncOutcome {
  /** `ran`: the function ran and returned; `failed`: it failed on every try; `dropped`: too old, or the stack stopped. */
  result: 'ran' | 'failed' | 'dropped';
  throttles: number;
  tries: number;
}

/**
 * One asynchronous invocation (InvocationType `Event`, as EventBridge Scheduler makes it): the caller does
 * not wait, Lambda queues the event and retries it by its policy: throttles until the event is too old,
 * function errors twice. `signal` ends the retries (the stack stops).
 */
export async function invokeAsync(
  invoke: () => Promise<unknown>,
  signal: AbortSignal,
  log: (line: string) => void,
  sleep: (ms: number, signal: AbortSignal) => Promise<void> = abortableSleep,
  now: () => number = Date.now,
): Promise<AsyncOutcome> {
  const queued = now();
  let throttles = 0;
  let errors = 0;
  let tries = 0;
  let backoff: number = ASYNC_POLICY.throttleBackoffMs.first;
  while (!signal.aborted) {
    tries += 1;
    try {
      await invoke();
      return { result: 'ran', throttles, tries };
    } catch (error) {
      if (signal.aborted) break;
      const refused = error instanceof LambdaError && !error.functionError;
      let delay: number;
      if (refused) {
        if (error.name !== 'TooManyRequestsException' && error.name !== 'ServiceException') {
          log(`async invocation dropped: ${error.name}: ${error.message}`);
          return { result: 'dropped', throttles, tries };
        }
        throttles += 1;
        delay = backoff;
        backoff = Math.min(backoff * 2, ASYNC_POLICY.throttleBackoffMs.max);
      } else {
        if (errors === ASYNC_POLICY.errorRetryDelaysMs.length) {
          log(`async invocation failed ${tries} times, last: ${(error as Error).name}: ${(error as Error).message}`);
          return { result: 'failed', throttles, tries };
        }
        delay = ASYNC_POLICY.errorRetryDelaysMs[errors];
        errors += 1;
      }
      if (now() + delay - queued > ASYNC_POLICY.maxEventAgeMs) {
        log('async invocation dropped: the event is older than its maximum age');
        return { result: 'dropped', throttles, tries };
      }
      await sleep(delay, signal);
    }
  }
  return { result: 'dropped', throttles, tries };
}

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    timer.unref();
    signal.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}
