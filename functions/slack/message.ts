import { argumentLine, argumentsForApprover } from '../core/approval-view';
import type { OperationRecord } from '../core/model';
import { approvalSummary } from '../core/notices';
import { requesterOf } from '../core/record-predicates';
import { policiesLine, RISK_TEXT } from '../html/approval-page';

/**
 * The Slack message of one approval (Block Kit), drawn from the operation as stored: while pending it carries
 * Approve / Deny; once decided it says by whom, and once settled how the call ended. Person-supplied text
 * (arguments, the tool's lines) goes in `plain_text` only, so nothing in it becomes a link or a mention.
 * Slack's limits (docs.slack.dev/reference/block-kit/blocks): 50 blocks a message, 3000 characters a section
 * text, 10 fields of 2000, 150 for a header, 75 for a button's label, 2000 for its value.
 */
export const SLACK_LIMITS = { blocks: 50, sectionText: 3000, fields: 10, fieldText: 2000, header: 150, contextElements: 10 } as const;

/** The action ids of the two buttons; the interactions route answers only these. */
export const SlackAction = { approve: 'toolrunner_approve', deny: 'toolrunner_deny' } as const;

/** Argument sections at most: the rest of the message (header, facts, policies, buttons) stays within 50 blocks. */
const MAX_ARGUMENT_SECTIONS = 40;

export interface SlackBlock {
  type: 'header' | 'section' | 'context' | 'actions' | 'divider';
  [key: string]: unknown;
}

export interface SlackMessage {
  /** The notification's and screen readers' text, and what clients without blocks show. */
  text: string;
  blocks: SlackBlock[];
}

/** A button's value: which approval, bound to which frozen arguments. A click on an older message than these arguments is refused. */
export function buttonValue(approvalId: string, inputHash: string): string {
  return `${approvalId} ${inputHash}`;
}

export function parseButtonValue(value: string): { approvalId: string; inputHash: string } | undefined {
  const match = /^(apr_[A-Za-z0-9_-]{1,200}) (\S{1,200})$/.exec(value);
  return match ? { approvalId: match[1], inputHash: match[2] } : undefined;
}

const plain = (text: string, max: number = SLACK_LIMITS.sectionText) => ({ type: 'plain_text', text: clip(text, max), emoji: false });

function clip(text: string, max: number): string {
  const chars = Array.from(text);
  return chars.length <= max ? text : `${chars.slice(0, max - 1).join('')}…`;
}

/** Lines packed into section texts of at most 3000 characters each (a longer line is clipped). */
function pack(lines: string[], maxChars: number): string[] {
  const chunks: string[] = [];
  let current = '';
  for (const raw of lines) {
    const line = clip(raw, maxChars);
    if (current && current.length + 1 + line.length > maxChars) {
      chunks.push(current);
      current = line;
    } else current = current ? `${current}\n${line}` : line;
  }
  if (current) chunks.push(current);
  return chunks;
}

/** What became of the approval and the call, in words; undefined while the approval waits. */
export function approvalStatusLine(op: OperationRecord): string | undefined {
  const approval = op.approval;
  if (!approval || approval.state === 'pending')
    return op.state === 'cancelled' ? 'The call was cancelled before anyone decided.' : undefined;
  const at = approval.decidedAt ? ` at ${approval.decidedAt}` : '';
  const decided =
    approval.state === 'expired'
      ? `Expired at ${approval.expiresAt}: nobody decided in time.`
      : `${approval.state === 'approved' ? 'Approved' : 'Denied'} by ${approval.decidedBy ?? 'an approver'}${at}${approval.reason ? ` (${approval.reason})` : ''}.`;
  return op.envelope ? `${decided} ${outcomeLine(op)}` : decided;
}

function outcomeLine(op: OperationRecord): string {
  const outcome = op.outcome;
  if (!outcome) return `The call ended ${op.state.replaceAll('_', ' ')}.`;
  if (outcome.kind === 'succeeded') return 'The call ran and succeeded.';
  if (outcome.kind === 'rejected' && outcome.code === 'approval_rejected') return 'The call did not run.';
  if (outcome.kind === 'outcome_unknown') return 'The call ran; its outcome is unknown and waits for a reviewer.';
  return `The call ended ${outcome.kind.replaceAll('_', ' ')} (${outcome.code}).`;
}

/**
 * The message for `op` as stored now. `secretFields`: the tool's, masked whole; undefined when they cannot be
 * learnt here (an operation kept before they were, in a function without the tool): then no argument is shown,
 * rather than one the tool marked secret.
 */
export function approvalMessage(op: OperationRecord, secretFields: readonly string[] | undefined): SlackMessage {
  const approval = op.approval!;
  const requester = requesterOf(op);
  const args: unknown = op.frozenArguments ? JSON.parse(op.frozenArguments) : undefined;
  const fields = args === undefined || secretFields === undefined ? [] : argumentsForApprover(args, secretFields);
  const status = approvalStatusLine(op);
  const pending = status === undefined && op.state === 'awaiting_approval' && approval.state === 'pending';

  const title = pending ? `Approve ${op.toolName}?` : `Approval of ${op.toolName}`;
  const blocks: SlackBlock[] = [{ type: 'header', text: plain(title, SLACK_LIMITS.header) }];
  if (op.approvalLines?.length) blocks.push({ type: 'section', text: plain(op.approvalLines.map((l) => `• ${l}`).join('\n')) });
  const facts = [
    `Requested by: ${requester}`,
    `Risk: ${op.risk ? `${op.risk.replaceAll('_', ' ')} (${RISK_TEXT[op.risk]})` : 'unknown'}`,
    `Run: ${op.runId}`,
    `Expires: ${approval.expiresAt}`,
  ];
  blocks.push({ type: 'section', fields: facts.map((f) => plain(f, SLACK_LIMITS.fieldText)) });
  blocks.push({ type: 'context', elements: [plain(`Arguments (hash ${op.inputHash}):`, SLACK_LIMITS.fieldText)] });
  const none = secretFields === undefined ? '(not shown here: the approval page and the console show them)' : '(no arguments)';
  const sections = pack(fields.length ? fields.map(argumentLine) : [none], SLACK_LIMITS.sectionText);
  const shown = sections.slice(0, MAX_ARGUMENT_SECTIONS);
  for (const text of shown) blocks.push({ type: 'section', text: plain(text) });
  if (sections.length > shown.length)
    blocks.push({
      type: 'context',
      elements: [
        plain(`Folded: ${sections.length - shown.length} more parts of the arguments; the approval page and the console show them all.`),
      ],
    });
  if (op.policies) blocks.push({ type: 'context', elements: [plain(`Policies: ${policiesLine(op.policies)}`)] });
  if (pending)
    blocks.push({
      type: 'actions',
      block_id: 'toolrunner_decision',
      elements: [
        {
          type: 'button',
          action_id: SlackAction.approve,
          style: 'primary',
          text: plain('Approve', 75),
          value: buttonValue(approval.approvalId, op.inputHash),
        },
        {
          type: 'button',
          action_id: SlackAction.deny,
          style: 'danger',
          text: plain('Deny', 75),
          value: buttonValue(approval.approvalId, op.inputHash),
        },
      ],
    });
  else blocks.push({ type: 'section', text: plain(status ?? `This call is ${op.state.replaceAll('_', ' ')}; nothing more to decide.`) });
  blocks.push({
    type: 'context',
    elements: [plain(`Approval ${approval.approvalId} · operation ${op.operationId}`, SLACK_LIMITS.fieldText)],
  });

  const summary = approvalSummary(op, requester);
  const text = clip(pending ? `Approval needed: ${summary}` : `${summary} ${status ?? ''}`.trim(), SLACK_LIMITS.sectionText);
  return { text, blocks: blocks.slice(0, SLACK_LIMITS.blocks) };
}
