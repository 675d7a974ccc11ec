import { InvokeCommand, type InvokeCommandOutput, type LambdaClient } from '@aws-sdk/client-lambda';
import { MalformedAnswerError, RunnerError, ToolRefusedError, TransportError } from '../core/errors';
import { describeBytes, RESULT_LIMITS } from '../core/result-record';
import type { ToolHost } from '../core/ports';
import { restoreError, ToolAnswerSchema, type ToolInvocation } from '../core/tool-invocation';

/** The Tools function ran but failed as a whole (crashed, timed out, ran out of memory): the tool may have acted. */
export class ToolFunctionError extends RunnerError {
  override name = 'ToolFunctionError' as const;
}

/**
 * The `Tools` function as a tool host: one synchronous invocation per attempt or lookup. How each failure
 * counts decides whether a write may be sent again, so they are kept apart:
 * - Lambda refused the invocation (throttled, denied, too large): the tool never ran, `TransportError` not sent;
 * - the function failed as a whole: the tool may have acted, an unexpected error (a write's outcome is unknown);
 * - the function refused before any tool code ran (its tools module lacks the tool, its schema refuses the
 *   arguments): `ToolRefusedError`, a definite failure, never "may have acted";
 * - the tool threw: its own error, rebuilt with its name and fields, classified as if thrown here;
 * - the tool's result is over the 5 MiB the runner records (`result_omitted`): `invalid_output`;
 * - no answer came (the attempt's deadline aborted the wait, the connection broke): sent, outcome unknown.
 * The client makes one attempt only: retries belong to the runner's policy, not to the SDK.
 */
export function lambdaToolHost(client: LambdaClient, functionName: string, toolNames: ReadonlySet<string>): ToolHost {
  return {
    hosts: (name) => toolNames.has(name),
    async run(call, ctx) {
      const invocation: ToolInvocation = {
        ...call,
        idempotencyKey: ctx.idempotencyKey,
        attempt: ctx.attempt,
        timeoutMs: Math.max(1, ctx.deadline - Date.now()),
      };
      let reply: InvokeCommandOutput;
      try {
        reply = await client.send(
          new InvokeCommand({ FunctionName: functionName, InvocationType: 'RequestResponse', Payload: JSON.stringify(invocation) }),
          { abortSignal: ctx.signal },
        );
      } catch (error) {
        const e = error as Error & { $metadata?: { httpStatusCode?: number } };
        // An answer from Lambda's API with an error status: the invocation was refused, the tool did not run.
        if (e.$metadata?.httpStatusCode && e.$metadata.httpStatusCode >= 400)
          throw new TransportError('refused', false, `the tools function was not invoked: ${e.name}: ${e.message}`, { cause: error });
        const reason = ctx.signal.aborted ? (ctx.signal.reason?.name === 'TimeoutError' ? 'timeout' : 'aborted') : 'reset';
        throw new TransportError(reason, true, `no answer from the tools function (${e.name})`, { cause: error });
      }
      const text = Buffer.from(reply.Payload ?? new Uint8Array()).toString('utf8');
      if (reply.FunctionError) throw new ToolFunctionError(`the tools function failed: ${text.slice(0, 500)}`);
      const answer = ToolAnswerSchema.safeParse(parsedOrUndefined(text));
      if (!answer.success) throw new ToolFunctionError('the tools function answered in an unknown shape');
      const data = answer.data;
      if ('refused' in data)
        throw new ToolRefusedError(data.refused.reason, `the tools function refused the call before running it: ${data.refused.message}`);
      if (data.upstreamStatus !== undefined) ctx.onUpstreamStatus(data.upstreamStatus);
      if ('error' in data) throw restoreError(data.error);
      // The tool ran and answered, but more than the runner records: its output is unusable (`invalid_output`).
      if ('result_omitted' in data)
        throw new MalformedAnswerError(
          `the tool's output cannot be recorded: it is larger than ${describeBytes(RESULT_LIMITS.maxRecordedBytes)} (${data.result_omitted.bytes} bytes, ${data.result_omitted.sha256})`,
        );
      return data.value;
    },
  };
}

function parsedOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
