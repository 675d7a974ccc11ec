import { attemptsInFlight, attemptToBlame } from '../steps/attempt-context';
import { defaultLog, type Log } from '../core/log';

/**
 * Keeps the process alive when tool code misbehaves: a promise rejection nobody handles, or an exception
 * thrown from a tool's timer, would otherwise end the process and every call in flight with it (Node's
 * default; on Lambda the runtime's, which ends the invocation). The error is logged as one JSON line,
 * attributed to the attempt it came from where that can be told, and the process goes on; the attempt
 * itself is settled by its own deadline as always.
 */
let installed = false;

export function guardProcess(log?: Log): void {
  if (installed) return;
  installed = true;
  // On Lambda the runtime's own listeners exit the process: the runner's take their place.
  if (process.env.AWS_LAMBDA_FUNCTION_NAME) {
    process.removeAllListeners('unhandledRejection');
    process.removeAllListeners('uncaughtException');
  }
  const report = (kind: string, thrown: unknown) => {
    const blamed = attemptToBlame();
    const error =
      thrown instanceof Error ? { error: thrown.name, detail: thrown.message } : { error: typeof thrown, detail: String(thrown) };
    (log ?? defaultLog()).error(`${kind} left by tool code; the process goes on`, {
      ...(blamed ? { operationId: blamed.operationId, attempt: blamed.attempt } : { attemptsInFlight: attemptsInFlight.size }),
      ...error,
    });
  };
  process.on('unhandledRejection', (reason) => report('an unhandled promise rejection', reason));
  process.on('uncaughtException', (error) => report('an uncaught exception', error));
}
