import { callerAnswerable } from '../core/attempt-protocol';
import type { OperationRecord } from '../core/model';
import type { Deps, OperationStore, WaitingSlot } from '../core/ports';
import { newRateSlotHolder } from '../core/ids';
import { logOf } from '../core/log';

/** A slot's lease outlives the wait by this much: the request still reads and answers after it. */
const LEASE_MARGIN_MS = 4_000;
/**
 * `Retry-After` of a poll answered at once because every waiting slot was held: the caller's next poll, not a
 * tight loop of answers that each cost an invocation of the API.
 */
export const NO_SLOT_RETRY_AFTER_SECONDS = 2;

/** The right to wait idle, taken at most once per request and given back when it answers. */
export interface WaitingPass {
  /** True once held (or where nothing bounds waits); false when every slot is held: answer now. */
  take(): Promise<boolean>;
  release(): Promise<void>;
  /** A take found every slot held: the request is answered as the operation stands, and polls again later. */
  readonly refused: boolean;
}

/**
 * One request's pass for an idle wait of up to `seconds` for `operationId`: a slot of `deps.waitingPolls`
 * leased until the wait's end, where the deployment bounds waits; otherwise always granted.
 */
export function waitingPass(deps: Pick<Deps, 'now' | 'waitingPolls' | 'log'>, operationId: string, seconds: number): WaitingPass {
  let slot: WaitingSlot | undefined;
  let refused = false;
  return {
    get refused() {
      return refused;
    },
    async take() {
      if (!deps.waitingPolls || slot) return true;
      const now = deps.now();
      slot = await deps.waitingPolls.take(newRateSlotHolder(operationId), now + seconds * 1000 + LEASE_MARGIN_MS, now);
      refused = !slot;
      return Boolean(slot);
    },
    async release() {
      const held = slot;
      slot = undefined;
      // Best effort: a slot not freed lapses at its lease.
      await held
        ?.release()
        .catch((error: Error) => logOf(deps).warn('a waiting slot was not freed', { operationId, error: error.message }));
    },
  };
}

/** Where no in-process notification exists (the API on its own Lambda), the waiter polls, backing off to this. */
const MAX_POLL_MS = 500;

export type OperationWatcher = ReturnType<typeof watchOperation>;

/** The newest committed version of an operation this process has seen, and a way to wait for the next. */
export function watchOperation(deps: Pick<Deps, 'watch'>, operationId: string) {
  let latest: OperationRecord | undefined;
  let wake: () => void = () => undefined;
  const unsubscribe = deps.watch?.subscribe(operationId, (next) => {
    if (!latest || next.version > latest.version) latest = next;
    wake();
  });
  return {
    inProcess: Boolean(unsubscribe),
    latest: () => latest,
    /** Resolves on the next notification or after `ms`, whichever comes first. */
    wait: (ms: number) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(0, ms));
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      }),
    wakeNow: () => wake(),
    close: () => unsubscribe?.(),
  };
}

/**
 * Long-poll (`Prefer: wait=N`): until the model's envelope is decided, the call waits for a person, or the
 * wait is over. Three ways to learn it without polling: the synchronous (Express) execution's end, an
 * in-process notification where the steps run beside the API, and otherwise a poll with backoff.
 * With `pass`, the wait is idle (the work is done elsewhere): it is made only once the pass is held, and
 * without one the operation is answered as it stands.
 */
export async function waitForSettled(
  deps: Pick<Deps, 'now'> & { store: Pick<OperationStore, 'getOperation'> },
  watcher: OperationWatcher,
  op: OperationRecord,
  seconds: number,
  finished?: Promise<OperationRecord | undefined>,
  pass?: WaitingPass,
): Promise<OperationRecord> {
  const done = callerAnswerable;
  /** The record the attempt returned, when the submitting process ran it itself. */
  let written: OperationRecord | undefined;
  const newest = () => [watcher.latest(), written].reduce<OperationRecord>((a, b) => (b && b.version > a.version ? b : a), current);
  let current = op;
  current = newest();
  if (done(current) || seconds === 0) return current;
  if (pass && !(await pass.take())) return current;
  const deadline = deps.now() + seconds * 1000;
  let ended = false;
  void finished?.then((last) => {
    written = last;
    ended = true;
    watcher.wakeNow();
  });
  // Single-threaded: between reading the newest version and starting to wait no notification can slip in.
  for (let pollMs = 50; deps.now() < deadline; pollMs = Math.min(MAX_POLL_MS, pollMs * 2)) {
    current = newest();
    if (done(current)) break;
    if (ended || !(watcher.inProcess || finished)) {
      const polled = await deps.store.getOperation(op.operationId);
      if (polled && polled.version > current.version) current = polled;
      // The execution ended: what it decided is in the record now; no need to wait any longer.
      if (ended || done(current)) break;
    }
    await watcher.wait(watcher.inProcess || finished ? deadline - deps.now() : Math.min(pollMs, deadline - deps.now()));
  }
  return current;
}
