/**
 * Errors that cross a boundary by name. Step Functions matches `ErrorEquals` on these names
 * (a test checks that every name in the ASL exists here), transports throw the upstream ones.
 */

/**
 * The error names the ASL's `ErrorEquals` matches, as string constants. Send these, never `SomeClass.name`:
 * the Lambdas are minified, and a class's `.name` is whatever the bundler calls it.
 */
export const ErrorNames = {
  ApprovalRejected: 'ApprovalRejectedError',
  OperationMoved: 'OperationMovedError',
} as const;
export type AslErrorName = (typeof ErrorNames)[keyof typeof ErrorNames];

/**
 * The base of the runner's errors: `cause` keeps the error a wrapping replaced, for the process's own log
 * and debugger. It never crosses a boundary: responses and envelopes carry a code and a message only, and
 * `crossError` (core/tool-invocation.ts) keeps it back. Sets no `name`: each subclass keeps its own.
 */
export class RunnerError extends Error {}

/** SendTaskFailure error name when an approver rejects; the ASL catches it. */
export class ApprovalRejectedError extends RunnerError {
  override name = ErrorNames.ApprovalRejected;
}

/** The operation moved under a step (cancelled, or handled by a concurrent execution). */
export class OperationMovedError extends RunnerError {
  override name = ErrorNames.OperationMoved;
}

export const ASL_ERROR_NAMES: readonly AslErrorName[] = Object.values(ErrorNames);

/** The upstream answered with a non-2xx status. */
export class UpstreamHttpError extends RunnerError {
  override name = 'UpstreamHttpError' as const;
  constructor(
    readonly status: number,
    readonly code: string | undefined,
    readonly retryAfterSeconds: number | undefined,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** The transport failed; `requestSent` says whether the upstream may have acted on it. */
export class TransportError extends RunnerError {
  override name = 'TransportError' as const;
  constructor(
    readonly reason: 'timeout' | 'refused' | 'reset' | 'aborted',
    readonly requestSent: boolean,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/**
 * The upstream answered, but not in its protocol's shape (an MCP result that is not a CallToolResult):
 * nothing a retry of the transport fixes, and for a write the effect is unknown. Classified `invalid_output`.
 */
export class MalformedAnswerError extends RunnerError {
  override name = 'MalformedAnswerError' as const;
}

export function isMalformedAnswer(error: Error): error is MalformedAnswerError {
  return error instanceof MalformedAnswerError || error.name === 'MalformedAnswerError';
}

/**
 * The `Tools` function refused the invocation before any tool code ran (a tool its module lacks, arguments its
 * schema refuses): the call was sent nowhere, so it failed for certain. Made by the caller's side from the
 * function's refusal (adapters/tool-function.ts), recognized by class only: an error a tool throws with
 * this name is the tool's own, and must never pass for "not run".
 */
/**
 * The tools function could not answer what only the tools module knows (the tools' description, a call's check at
 * validation): nothing was decided and nothing ran, so the request is refused for now, to be sent again.
 */
export class ToolsUnavailableError extends RunnerError {
  override name = 'ToolsUnavailableError' as const;
}

export class ToolRefusedError extends RunnerError {
  override name = 'ToolRefusedError' as const;
  constructor(
    readonly reason: string,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/**
 * Recognizes the transport errors by name and shape as well as by class: a user's tools module may load its
 * own copy of this module (a second install of the package, or a loader that namespaces modules), and its
 * classes are then not ours.
 */
export function isUpstreamHttpError(error: Error): error is UpstreamHttpError {
  return (
    error instanceof UpstreamHttpError ||
    (error.name === 'UpstreamHttpError' && typeof (error as Partial<UpstreamHttpError>).status === 'number')
  );
}

export function isTransportError(error: Error): error is TransportError {
  return (
    error instanceof TransportError ||
    (error.name === 'TransportError' &&
      typeof (error as Partial<TransportError>).reason === 'string' &&
      typeof (error as Partial<TransportError>).requestSent === 'boolean')
  );
}

/** Anything thrown, as an Error (a thrown string or object must not crash classification). */
export function ensureError(thrown: unknown): Error {
  if (thrown instanceof Error) return thrown;
  return new Error(typeof thrown === 'string' ? thrown : 'non-error thrown');
}
