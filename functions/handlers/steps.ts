import { z } from 'zod';
import { expireApproval, requestApproval } from '../steps/approval';
import type { Deps } from '../steps/deps';
import { executeAttempt } from '../steps/execute';
import { reconcileOperation } from '../steps/reconcile';
import { sweep } from '../steps/resume';
import { recordOperation, reportOperation } from '../steps/settle';
import type { StepOutput } from '../steps/validate';
import { validateOperation } from '../steps/validate';
import { toolsReady } from '../tools/mcp-upstream';
import { lazyDeps } from './runtime';
import { logger } from './observability';

const StepInput = z.object({ operationId: z.string().regex(/^op_[A-Za-z0-9]+$/) });
const ApprovalInput = StepInput.extend({ taskToken: z.string().min(1) });

type Step = (deps: Deps, operationId: string) => Promise<StepOutput>;

/** A lifecycle Task's Lambda: parse the payload, run the step, return where to go next. */
export function makeStepHandler(name: string, step: Step, deps: () => Deps = lazyDeps) {
  return async (event: unknown): Promise<StepOutput> => {
    const { operationId } = StepInput.parse(event);
    await toolsReady(deps().tools);
    const out = await step(deps(), operationId);
    logger.info('step finished', { step: name, operationId, next: out.next });
    return out;
  };
}

/** AwaitApproval's Lambda: the token goes to DynamoDB, never to a log. */
export function makeRequestApprovalHandler(deps: () => Deps = lazyDeps) {
  return async (event: unknown): Promise<void> => {
    const { operationId, taskToken } = ApprovalInput.parse(event);
    await requestApproval(deps(), operationId, taskToken);
    logger.info('approval requested', { operationId });
  };
}

export function makeSweepHandler(deps: () => Deps = lazyDeps) {
  return async (): Promise<{ resumed: string[] }> => {
    const resumed = await sweep(deps());
    if (resumed.length) logger.warn('resumed operations past their lease', { resumed });
    return { resumed };
  };
}

/** Every lifecycle Lambda, by the name the ASL's `${...FunctionArn}` placeholders and the CDK stack use. */
export const STEPS = {
  Validate: validateOperation,
  ExpireApproval: expireApproval,
  Execute: executeAttempt,
  Reconcile: reconcileOperation,
  Record: recordOperation,
  Report: reportOperation,
} as const satisfies Record<string, Step>;
