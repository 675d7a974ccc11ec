import type { Store } from '../adapters/dynamo-store';
import type { SubmissionGuard } from '../adapters/submission-guard';
import type { RunnerConfig } from '../core/config';
import type { Principal } from '../core/model';
import type { ToolRegistry } from '../core/tool-spec';

/** The lifecycle engine as the steps need it: Step Functions on AWS, the embedded engine locally. */
export interface LifecyclePort {
  start(operationId: string, executionName: string): Promise<void>;
  stop(executionName: string, cause: string): Promise<void>;
  sendTaskSuccess(taskToken: string, output: unknown): Promise<void>;
  sendTaskFailure(taskToken: string, error: string, cause: string): Promise<void>;
}

/** Tells approvers that an operation waits for them (SNS on AWS, the console locally). */
export interface Notifier {
  approvalRequested(message: {
    approvalId: string;
    operationId: string;
    toolName: string;
    requestedBy: string;
    expiresAt: string;
    links: { approverId: string; url: string }[];
  }): Promise<void>;
}

/** Everything a step touches outside the pure core; tests swap these without mocking frameworks. */
export interface Deps {
  store: Store;
  tools: ToolRegistry;
  /** Current configuration; re-read when it changes, so revoked permissions take effect. */
  config(): Promise<RunnerConfig & { approvalSecret: string }>;
  lifecycle: LifecyclePort;
  notifier: Notifier;
  now(): number;
  random(): number;
  /** Base URL of the API as approvers reach it, for approval links. */
  publicBaseUrl: string;
  /** Answers replayed submissions before they reach the lifecycle (Powertools idempotency); optional. */
  submissionGuard?: SubmissionGuard;
  /** Where the runtime can abort an in-flight attempt on cancellation (embedded engine); absent on AWS. */
  abortSignalFor?(operationId: string): AbortSignal | undefined;
}

/** The principal with this id in a configuration already read (one read per step, not one per lookup). */
export function principalIn(config: RunnerConfig, id: string): Principal | undefined {
  const entry = config.principals.find((p) => p.id === id);
  return entry && { id: entry.id, roles: entry.roles, tools: entry.tools };
}

export function executionNameOf(op: { operationId: string; resumes: number }): string {
  return op.resumes === 0 ? op.operationId : `${op.operationId}-r${op.resumes}`;
}
