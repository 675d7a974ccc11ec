import type { SlackMessageRef } from '../core/model';
import { accepts } from '../core/transition-table';
import { advance, type AdvanceDeps } from './advance';

/** Keeps where an approval's Slack messages went with the approval (the engine's `note_approval_messages`). */
export async function noteApprovalMessages(deps: AdvanceDeps, operationId: string, messages: SlackMessageRef[]): Promise<void> {
  await advance(deps, operationId, (op) => ({
    value: undefined,
    events: accepts(op, 'note_approval_messages') ? [{ type: 'note_approval_messages', messages }] : [],
  }));
}
