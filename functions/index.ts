/**
 * The package's main entry (`toolrunner`): what a tools module needs to declare tools the runner can run.
 * `toolrunner start --tools PATH` loads a module whose default export is an array of these specs.
 */
export { defineTool, ToolRegistrationError } from './core/tool-spec';
export type { ApprovalPolicy, ReconcileResult, ToolContext, ToolSpec, ToolVerify } from './core/tool-spec';
export type { BackoffPolicy } from './core/backoff';
export type { Envelope } from './core/envelope';
export type { Risk } from './core/model';
export type { TraceEvent, TraceType } from './core/trace';
export { requestJson, retryAfterSeconds, type JsonRequest } from './tools/http';
export { TransportError, UpstreamHttpError } from './core/errors';
/** The one way amounts are shown to people (the approval page, the console): use it in `describeForApproval`. */
export { formatCents, formatMinorUnits } from './core/format';
/** For an approver's webhook receiver: checks `Toolrunner-Signature` against the raw body and its `notify.secret`. */
export {
  signWebhookBody,
  verifyWebhookSignature,
  WEBHOOK_SIGNATURE_HEADER,
  WEBHOOK_TOLERANCE_SECONDS,
  type WebhookCheck,
} from './core/webhook-signature';
export type { ApprovalRequestedPayload } from './core/notices';
/** One argument of an approval as a person reads it (the webhook payload's `arguments`). */
export type { ArgumentField } from './core/approval-view';
