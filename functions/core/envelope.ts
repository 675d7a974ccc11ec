import type { OperationRecord, Outcome } from './model';

/** The only thing the model sees (`EnvelopeSchema` in `functions/http/schemas.ts` documents it). */
export interface Envelope {
  status: 'succeeded' | 'rejected' | 'failed' | 'outcome_unknown' | 'budget_exhausted' | 'cancelled';
  code?: string;
  call_id: string;
  logical_operation_id: string;
  message: string;
  /** Only when succeeded, up to the tool's `maxResultBytes`: the output validated against its output schema. */
  result?: unknown;
  /** Succeeded, but the result is over the tool's `maxResultBytes`: its size and hash, not its content. */
  result_omitted?: { bytes: number; sha256: string };
  allowed_next_actions: string[];
}

const NEXT_ACTIONS: Record<string, string[]> = {
  succeeded: ['continue'],
  invalid_arguments: ['retry_with_new_arguments'],
  unknown_tool: ['choose_another_tool'],
  loop_detected: ['retry_with_new_arguments', 'choose_another_tool', 'stop'],
  forbidden: ['choose_another_tool', 'request_human_review'],
  approval_rejected: ['choose_another_tool', 'request_human_review'],
  approval_expired: ['retry_with_new_call_id', 'request_human_review'],
  rate_limited: ['retry_later_with_new_call_id'],
  upstream_unavailable: ['retry_later_with_new_call_id'],
  permanent_failure: ['retry_with_new_arguments', 'request_human_review'],
  timeout_unknown: ['check_status', 'request_human_review'],
  invalid_output: ['retry_with_new_arguments', 'request_human_review'],
  budget_exhausted: ['stop'],
  spend_limit: ['stop'],
  cancelled: ['stop'],
};

/** What every succeeded envelope says besides its ids, as a fresh object (the API puts the result in when it answers). */
export function succeededSays(): Pick<Envelope, 'status' | 'message' | 'allowed_next_actions'> {
  return { status: 'succeeded', message: 'the tool call succeeded', allowed_next_actions: [...NEXT_ACTIONS.succeeded] };
}

/**
 * Builds the envelope for an outcome as the record keeps it: never with the result itself, which the
 * record holds once (`outcome.result`); the API puts it in (or `result_omitted`) when it answers.
 */
export function envelopeFor(op: Pick<OperationRecord, 'callId' | 'operationId'>, outcome: Outcome): Envelope {
  const base = { call_id: op.callId, logical_operation_id: op.operationId };
  switch (outcome.kind) {
    case 'succeeded':
      return { ...base, ...succeededSays() };
    case 'rejected':
      return {
        ...base,
        status: 'rejected',
        code: outcome.code,
        message: outcome.message,
        allowed_next_actions: NEXT_ACTIONS[outcome.code],
      };
    case 'failed_retryable':
    case 'failed_permanent':
      return { ...base, status: 'failed', code: outcome.code, message: outcome.message, allowed_next_actions: NEXT_ACTIONS[outcome.code] };
    case 'outcome_unknown':
      return {
        ...base,
        status: 'outcome_unknown',
        code: outcome.code,
        message: `${outcome.message}; a person will settle it, do not repeat the call`,
        allowed_next_actions: NEXT_ACTIONS.timeout_unknown,
      };
    case 'budget_exhausted':
      return {
        ...base,
        status: 'budget_exhausted',
        code: outcome.code,
        message: outcome.message,
        allowed_next_actions: NEXT_ACTIONS[outcome.code],
      };
    case 'cancelled':
      return { ...base, status: 'cancelled', code: 'cancelled', message: outcome.message, allowed_next_actions: NEXT_ACTIONS.cancelled };
  }
}
