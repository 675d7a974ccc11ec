import {
  ExecutionAlreadyExists,
  ExecutionDoesNotExist,
  SendTaskFailureCommand,
  SendTaskSuccessCommand,
  StartExecutionCommand,
  StopExecutionCommand,
  type SFNClient,
} from '@aws-sdk/client-sfn';
import type { LifecyclePort } from '../steps/deps';

/** The lifecycle engine through the real Step Functions API (AWS, LocalStack, or the embedded endpoint). */
export function sfnLifecycle(client: SFNClient, stateMachineArn: string): LifecyclePort {
  const executionArn = (name: string) => `${stateMachineArn.replace(':stateMachine:', ':execution:')}:${name}`;
  return {
    async start(operationId, name) {
      try {
        await client.send(new StartExecutionCommand({ stateMachineArn, name, input: JSON.stringify({ operationId }) }));
      } catch (error) {
        // Same name, different input or already closed: the execution for this name exists, which is what we want.
        if (!(error instanceof ExecutionAlreadyExists)) throw error;
      }
    },
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
