import { z } from 'zod';
import type { StepOutput } from '../core/next-step';
import type { Deps } from '../core/ports';
import { expireApprovalStep, requestApproval } from '../steps/approval';
import { executeAttempt } from '../steps/execute';
import { handOffToStandard } from '../steps/handoff';
import { reconcileOutcome } from '../steps/reconcile';
import { reportEnvelope } from '../steps/report';
import { routeByRecord } from '../steps/route';
import type { StepResult } from '../steps/step-result';
import type { LifecycleFunction } from '../../statemachines/definition';
import { toolsReady } from '../tools/mcp-upstream';
import { EXPRESS_TIMEOUT_SECONDS } from '../../statemachines/express';
import { lazyDeps } from './runtime';
import { flushingTelemetry } from './flush-telemetry';
import { logger } from './observability';

const StepInput = z.object({
  operationId: z.string().regex(/^op_[A-Za-z0-9]+$/),
  /** The Express machine passes when its execution started (statemachines/express.ts): it ends five minutes later. */
  expressStartedAt: z.iso.datetime().optional(),
});
const ApprovalInput = StepInput.extend({ taskToken: z.string().min(1) });

/** When the execution running the step must end, where that is known (Express). */
type StepContext = { mustEndBy?: number };
type Step = (deps: Deps, operationId: string, context?: StepContext) => Promise<StepOutput>;

/** A step's Lambda answers Step Functions with where to go next; the record the step left stays in the process. */
const output =
  (step: (deps: Deps, operationId: string) => Promise<StepResult>): Step =>
  async (deps, operationId) =>
    (await step(deps, operationId)).output;

/** A lifecycle Task's Lambda: parse the payload, run the step, return where to go next. */
export function makeStepHandler(name: string, step: Step, deps: () => Deps = lazyDeps) {
  return flushingTelemetry(async (event: unknown): Promise<StepOutput> => {
    const { operationId, expressStartedAt } = StepInput.parse(event);
    await toolsReady(deps().tools);
    const mustEndBy = expressStartedAt ? Date.parse(expressStartedAt) + EXPRESS_TIMEOUT_SECONDS * 1000 : undefined;
    const out = await step(deps(), operationId, { mustEndBy });
    logger.debug('step finished', { step: name, operationId, next: out.next });
    return out;
  });
}

/** AwaitApproval's Lambda: the token goes to DynamoDB, never to a log. */
export function makeRequestApprovalHandler(deps: () => Deps = lazyDeps) {
  return flushingTelemetry(async (event: unknown): Promise<void> => {
    const { operationId, taskToken } = ApprovalInput.parse(event);
    await requestApproval(deps(), operationId, taskToken);
    logger.debug('approval requested', { operationId });
  });
}

/**
 * The step each lifecycle Lambda runs, keyed by the registry's names (statemachines/definition.ts): deployed
 * names, kept as they are; `Validate` routes by the record (the submission validates the call).
 */
export const STEPS = {
  Validate: output(routeByRecord),
  ExpireApproval: expireApprovalStep,
  Execute: async (deps, operationId, context?: StepContext) =>
    (await executeAttempt(deps, operationId, undefined, false, context?.mustEndBy)).output,
  Reconcile: output(reconcileOutcome),
  Report: output(reportEnvelope),
  Handoff: output(handOffToStandard),
} as const satisfies Record<Exclude<LifecycleFunction, 'RequestApproval'>, Step>;

/** Every lifecycle handler by registry name: what the embedded stack runs and each Lambda entry exports. */
export function makeLifecycleHandlers(deps: () => Deps = lazyDeps): Record<LifecycleFunction, (payload: unknown) => Promise<unknown>> {
  return {
    Validate: makeStepHandler('Validate', STEPS.Validate, deps),
    RequestApproval: makeRequestApprovalHandler(deps),
    ExpireApproval: makeStepHandler('ExpireApproval', STEPS.ExpireApproval, deps),
    Execute: makeStepHandler('Execute', STEPS.Execute, deps),
    Reconcile: makeStepHandler('Reconcile', STEPS.Reconcile, deps),
    Report: makeStepHandler('Report', STEPS.Report, deps),
    Handoff: makeStepHandler('Handoff', STEPS.Handoff, deps),
  };
}
