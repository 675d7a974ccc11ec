import { minuteBucket } from '../../functions/core/rate-limits';

/** Waits (polling the clock, with a deadline) until `ok` holds for the time left in the current UTC minute. */
async function untilMinute(ok: (msLeft: number, bucket: string) => boolean): Promise<void> {
  const deadline = Date.now() + 75_000;
  for (;;) {
    const now = Date.now();
    if (ok(60_000 - (now % 60_000), minuteBucket(now))) return;
    if (now > deadline) throw new Error('the clock did not reach the minute waited for');
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Runs `batch` within one UTC minute (perMinute limits count per minute): it starts with at least `marginMs`
 * left in the minute; a batch that still crossed a minute's end (a loaded machine) left counts in the new minute,
 * so it is run again, with fresh call ids, from the start of the minute after that.
 */
export async function withinOneMinute<T>(batch: (attempt: number) => Promise<T>, marginMs = 5_000): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    await untilMinute((msLeft) => msLeft >= marginMs);
    const before = minuteBucket(Date.now());
    const out = await batch(attempt);
    const after = minuteBucket(Date.now());
    if (after === before || attempt >= 2) return out;
    await untilMinute((_, bucket) => bucket > after);
  }
}
