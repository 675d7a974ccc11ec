import type { TaskStore } from '@modelcontextprotocol/sdk/experimental/tasks/interfaces.js';
import { ErrorCode, McpError, type CallToolResult, type Task } from '@modelcontextprotocol/sdk/types.js';
import { ToolRunnerError, type Envelope, type Operation, type ToolRunnerClient } from '../client';
import { callIdentity, envelopeResult, pendingResult, type SessionContext } from './tool-calls';

/**
 * MCP tasks (2025-11-25, experimental) as the runner's operations: the task id is the operation id, and
 * every task request reads or cancels the operation through the HTTP API, so a task outlives the session,
 * a reconnect and a restart of the runner.
 */

const POLL_MS = 500;

/** The operation's state as a task status: a person's approval pending is `input_required`. */
export function taskOf(op: Operation): Task {
  const status: Task['status'] = op.envelope
    ? op.envelope.status === 'succeeded'
      ? 'completed'
      : op.envelope.status === 'cancelled'
        ? 'cancelled'
        : 'failed'
    : op.state === 'awaiting_approval' && op.approval?.state === 'pending'
      ? 'input_required'
      : 'working';
  const at = op.updatedAt ?? new Date().toISOString();
  return {
    taskId: op.operationId,
    status,
    // Operations are kept, never expired by the runner.
    ttl: null,
    createdAt: op.createdAt ?? at,
    lastUpdatedAt: at,
    pollInterval: POLL_MS,
    statusMessage: op.envelope?.message ?? (status === 'input_required' ? 'waiting for a person to approve' : `operation ${op.state}`),
  };
}

export function taskResultOf(op: Operation): CallToolResult {
  return op.envelope ? envelopeResult(op.envelope as Envelope) : pendingResult(op);
}

async function readOperation(client: ToolRunnerClient, taskId: string): Promise<Operation | null> {
  try {
    return await client.getOperation(taskId);
  } catch (error) {
    // Another principal's operation, or an id no operation can have, is as invisible as one that does not exist.
    if (error instanceof ToolRunnerError && [400, 403, 404].includes(error.status)) return null;
    throw error;
  }
}

/** The task store of one MCP session: the session's caller, the session's run. */
export function operationTaskStore(client: ToolRunnerClient, runId: string): TaskStore {
  return {
    async createTask() {
      // Never used: the tools/call handler submits the operation, which is the task.
      throw new McpError(ErrorCode.InternalError, 'tasks are created by submitting a tool call');
    },
    async getTask(taskId) {
      const op = await readOperation(client, taskId);
      return op ? taskOf(op) : null;
    },
    async storeTaskResult() {
      throw new McpError(ErrorCode.InternalError, 'results are recorded by the runner');
    },
    async getTaskResult(taskId) {
      const op = await readOperation(client, taskId);
      if (!op) throw new McpError(ErrorCode.InvalidParams, `Task not found: ${taskId}`);
      return taskResultOf(op);
    },
    async updateTaskStatus(taskId, status) {
      // The only change a client can ask for is tasks/cancel: exactly POST /v1/operations/{id}/cancel.
      if (status !== 'cancelled') return;
      try {
        await client.cancelOperation(taskId);
      } catch (error) {
        if (error instanceof ToolRunnerError) throw new McpError(ErrorCode.InvalidParams, `${error.code}: ${error.message}`);
        throw error;
      }
    },
    async listTasks() {
      const ids = await client.operationIdsOfRun(runId);
      const ops = await Promise.all(ids.slice(-100).map((id) => readOperation(client, id)));
      return { tasks: ops.filter((op): op is Operation => op !== null).map(taskOf) };
    },
  };
}

/** A task-augmented `tools/call`: the operation is submitted and returned at once as the task. */
export async function submitAsTask(
  session: SessionContext,
  request: { name: string; arguments?: Record<string, unknown>; _meta?: Record<string, unknown> },
  extra: { requestId: string | number },
): Promise<{ task: Task }> {
  const { callId, turn } = await callIdentity(session, request, extra.requestId);
  const submitted = await session.client.submitToolCall(
    session.runId,
    { callId, turn, name: request.name, arguments: request.arguments ?? {} },
    { waitSeconds: 0 },
  );
  if (submitted.kind === 'refused') throw new McpError(ErrorCode.InvalidParams, `${submitted.code}: ${submitted.message}`);
  const operationId = submitted.kind === 'envelope' ? submitted.envelope.logical_operation_id : submitted.operationId;
  return { task: taskOf(await session.client.getOperation(operationId)) };
}
