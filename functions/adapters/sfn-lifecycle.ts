import {
  ExecutionAlreadyExists,
  ExecutionDoesNotExist,
  SendTaskFailureCommand,
  SendTaskSuccessCommand,
  StartExecutionCommand,
  StartSyncExecutionCommand,
  StopExecutionCommand,
  type SFNClient,
} from '@aws-sdk/client-sfn';
import { MetricName } from '../core/metric-names';
import type { LifecyclePort, Metrics } from '../core/ports';
import { defaultLog } from '../core/log';

/** Each refused attempt of a Step Functions call, inside the SDK's retries: what the StatesApiThrottled alarm reads. */
function countThrottles(client: SFNClient, metrics: Metrics): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      try {
        return await next(args);
      } catch (error) {
        const name = (error as { name?: string }).name;
        if (name === 'ThrottlingException' || name === 'TooManyRequestsException')
          metrics.count(MetricName.statesApiThrottled, { api: String(context.commandName ?? 'unknown').replace(/Command$/, '') });
        throw error;
      }
    },
    // Deserialize runs once per attempt (the retry middleware is outside it), after the error is parsed.
    { step: 'deserialize', priority: 'high', name: 'countStatesApiThrottles' },
  );
}

/**
 * The lifecycle engine through the real Step Functions API (AWS, LocalStack, or the embedded endpoint).
 * With an Express machine, calls that need no approval run there and are answered synchronously.
 */
export function sfnLifecycle(
  client: SFNClient,
  stateMachineArn: string,
  expressStateMachineArn?: string,
  metrics?: Metrics,
): LifecyclePort {
  if (metrics) countThrottles(client, metrics);
  const executionArn = (name: string) => `${stateMachineArn.replace(':stateMachine:', ':execution:')}:${name}`;
  return {
    async start(input, name, machine = 'standard') {
      const arn = machine === 'express' && expressStateMachineArn ? expressStateMachineArn : stateMachineArn;
      try {
        await client.send(new StartExecutionCommand({ stateMachineArn: arn, name, input: JSON.stringify(input) }));
      } catch (error) {
        // Same name, different input or already closed: the execution for this name exists, which is what we want.
        if (!(error instanceof ExecutionAlreadyExists)) throw error;
      }
    },
    ...(expressStateMachineArn
      ? {
          async startSync(input, name) {
            const out = await client.send(
              new StartSyncExecutionCommand({ stateMachineArn: expressStateMachineArn, name, input: JSON.stringify(input) }),
            );
            // A failed or timed-out Express execution leaves the operation to its lease: the sweeper resumes it.
            if (out.status !== 'SUCCEEDED')
              defaultLog().warn('express execution did not succeed', { name, status: out.status, error: out.error });
          },
        }
      : {}),
    async stop(name, cause) {
      try {
        await client.send(new StopExecutionCommand({ executionArn: executionArn(name), cause }));
      } catch (error) {
        if (!(error instanceof ExecutionDoesNotExist)) throw error;
      }
    },
    async sendTaskSuccess(taskToken, output) {
      await client.send(new SendTaskSuccessCommand({ taskToken, output: JSON.stringify(output) }));
    },
    async sendTaskFailure(taskToken, error, cause) {
      await client.send(new SendTaskFailureCommand({ taskToken, error, cause }));
    },
  };
}
