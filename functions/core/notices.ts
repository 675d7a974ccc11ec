import { type BudgetThresholdNotice, budgetThresholdText } from './budget-thresholds';
import { type ArgumentField, argumentLine, argumentsForApprover } from './approval-view';
import { formatCents } from './format';
import type { OperationRecord } from './model';
import type { ApprovalDecidedNotice, ApprovalRequest, ReviewNotice } from './ports';

/**
 * What approvers and everyone else are told, in words and as payloads, decided once for every channel
 * (webhooks, SNS, the local console output).
 */

/**
 * One line about an approval request, for a notification: who asks, which tool, which run, its risk and
 * what it counts against the run's spend budget. No arguments (they may hold personal data) and no link:
 * the page behind each approver's own link shows the exact operation.
 */
export function approvalSummary(op: Pick<OperationRecord, 'toolName' | 'runId' | 'risk' | 'costCents'>, requestedBy: string): string {
  const risk = op.risk ? ` (${op.risk.replaceAll('_', ' ')})` : '';
  const cost = op.costCents ? `; it counts ${formatCents(op.costCents)} against the run's spend budget` : '';
  return `${requestedBy} asks to run ${op.toolName}${risk} in run ${op.runId}${cost}.`;
}

/** The body POSTed to an approver's webhook: its own link only. Field names are part of the contract. */
export interface ApprovalRequestedPayload {
  type: 'approval.requested';
  approvalId: string;
  operationId: string;
  runId: string;
  toolName: string;
  summary: string;
  /** The approval page, signed for the receiving approver alone. */
  url: string;
  expiresAt: string;
  /** The arguments' hash, as the approval page shows it. */
  inputHash?: string;
  /** The tool's `describeForApproval` lines for these arguments. */
  approvalLines?: string[];
  /** The frozen arguments as an approver reads them (core/approval-view.ts: secret fields and card numbers masked, long strings folded). */
  arguments?: ArgumentField[];
  /** Present on a reminder or escalation (`approvalEscalation`): the request was sent before to others or to this approver. */
  escalation?: { kind: 'escalated' | 'reminded'; step: number; afterMinutes: number };
}

/** What of the frozen arguments reaches an approver's own channels. */
export type ApproverArguments = Pick<ApprovalRequestedPayload, 'inputHash' | 'approvalLines' | 'arguments'>;

/**
 * The arguments of an operation as an approver reads them, with their hash and the tool's lines. `secretFields`
 * undefined means the tool's could not be learnt: the fields are left out then (the approval page shows
 * them), rather than shown unmasked.
 */
export function approverArguments(
  op: { inputHash: string; approvalLines?: string[]; frozenArguments?: string },
  secretFields: readonly string[] | undefined,
): Required<Pick<ApproverArguments, 'inputHash' | 'approvalLines'>> & ApproverArguments {
  const base = { inputHash: op.inputHash, approvalLines: op.approvalLines ?? [] };
  if (op.frozenArguments === undefined || secretFields === undefined) return base;
  return { ...base, arguments: argumentsForApprover(JSON.parse(op.frozenArguments), secretFields) };
}

/** The webhook payload for one approver's link of a request. */
export function approvalRequestedPayload(request: ApprovalRequest, link: { url: string }): ApprovalRequestedPayload {
  return {
    type: 'approval.requested',
    approvalId: request.approvalId,
    operationId: request.operationId,
    runId: request.runId,
    toolName: request.toolName,
    summary: request.summary,
    url: link.url,
    expiresAt: request.expiresAt,
    ...(request.inputHash === undefined ? {} : { inputHash: request.inputHash }),
    ...(request.approvalLines === undefined ? {} : { approvalLines: request.approvalLines }),
    ...(request.arguments === undefined ? {} : { arguments: request.arguments }),
    ...(request.escalation ? { escalation: request.escalation } : {}),
  };
}

/** What one SNS message may hold, in bytes (SNS refuses a larger one). */
export const SNS_MESSAGE_MAX_BYTES = 256 * 1024;

/**
 * One approver's request as plain text (an email through the links topic): the summary, the tool's lines,
 * each argument as the approval page shows it (secret fields and card numbers masked, long strings folded),
 * the hash, and that approver's own link last. Lines that would take the message past `maxBytes` are left
 * to the page, and the text says how many.
 */
export function approvalRequestText(request: ApprovalRequest, url: string, maxBytes = SNS_MESSAGE_MAX_BYTES): string {
  const tail = [
    ...(request.inputHash ? [`Arguments hash ${request.inputHash}`] : []),
    `Review the exact operation and decide before ${request.expiresAt}:`,
    url,
  ];
  const fields = (request.arguments ?? []).map((field) => `  ${argumentLine(field)}`);
  const fieldsLeftOut = (n: number) => `  (${n} more on the approval page)`;
  // Room is kept for the arguments' heading and, at worst, their note: the tool's lines cannot crowd them out.
  const heading = fields.length ? Buffer.byteLength(`Arguments:\n${fieldsLeftOut(fields.length)}\n`) : 0;
  const room = maxBytes - Buffer.byteLength([request.summary, ...tail].join('\n'));
  const own = fitting(request.approvalLines ?? [], room - heading, (n) => `(${n} more lines on the approval page)`);
  const args = fields.length ? fitting(fields, room - own.bytes - Buffer.byteLength('Arguments:\n'), fieldsLeftOut) : undefined;
  return [request.summary, ...own.lines, ...(args ? ['Arguments:', ...args.lines] : []), ...tail].join('\n');
}

/** The first of `lines` that fit in `room` bytes (each with its newline), and a note of how many did not. */
function fitting(lines: string[], room: number, leftOut: (count: number) => string): { lines: string[]; bytes: number } {
  const sizes = lines.map((line) => Buffer.byteLength(line) + 1);
  const all = sizes.reduce((a, b) => a + b, 0);
  if (all <= room) return { lines, bytes: all };
  const noteBytes = Buffer.byteLength(leftOut(lines.length)) + 1;
  let bytes = 0;
  let count = 0;
  while (count < lines.length && bytes + sizes[count] + noteBytes <= room) bytes += sizes[count++];
  const note = leftOut(lines.length - count);
  return { lines: [...lines.slice(0, count), note], bytes: bytes + Buffer.byteLength(note) + 1 };
}

/** How a reminder or an escalation starts its subject line; nothing for a first request. */
export function escalationPrefix(request: Pick<ApprovalRequest, 'escalation'>): string {
  if (!request.escalation) return '';
  return request.escalation.kind === 'reminded' ? 'Reminder: ' : 'Escalated: ';
}

/** A link-free notice for anyone who follows the runner (the notices topic, the local output). */
export type Notice =
  | ({ type: 'approval.requested' } & Omit<ApprovalRequest, 'links' | keyof ApproverArguments> & { approvers: string[] })
  | ({ type: 'approval.decided' } & ApprovalDecidedNotice)
  | ({ type: 'review.required' } & ReviewNotice)
  | ({ type: 'budget.threshold' } & BudgetThresholdNotice);

/** The request as a notice: who may decide, never their links, nor the arguments (they may hold personal data). */
export function approvalRequestedNotice(request: ApprovalRequest): Notice {
  const { links, inputHash: _hash, approvalLines: _lines, arguments: _arguments, ...rest } = request;
  return { type: 'approval.requested', ...rest, approvers: links.map((l) => l.approverId) };
}

/** A notice in one line of words (an email subject's worth). */
export function noticeSubject(notice: Notice): string {
  switch (notice.type) {
    case 'approval.requested':
      return `Approval requested: ${notice.toolName}`;
    case 'approval.decided':
      return `Approval ${notice.decision}: ${notice.toolName}`;
    case 'review.required':
      return `Review needed: ${notice.toolName}`;
    case 'budget.threshold':
      return `Spend at ${notice.percent}%: ${notice.scope === 'run' ? `run ${notice.runId}` : `principal ${notice.principalId}`}`;
  }
}

/** A notice as text for people: what happened and where to act, with no link that decides anything. */
export function noticeText(notice: Notice): string {
  switch (notice.type) {
    case 'approval.requested':
      return `approval requested: ${notice.summary} Operation ${notice.operationId}, expires ${notice.expiresAt}. Approvers (${notice.approvers.join(', ') || 'none'}) receive their own links; pending approvals are in the console at /console/approvals.`;
    case 'approval.decided':
      return `approval ${notice.decision}${notice.decidedBy ? ` by ${notice.decidedBy}` : ''}: ${notice.toolName} ${notice.operationId} (run ${notice.runId}).`;
    case 'review.required':
      return `review needed: ${notice.toolName} ${notice.operationId} (run ${notice.runId}): ${notice.reason}. Resolve with POST /v1/operations/${notice.operationId}/resolve or in the console at /console/reviews.`;
    case 'budget.threshold':
      return budgetThresholdText(notice);
  }
}
