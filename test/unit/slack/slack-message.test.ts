import { describe, expect, it } from 'vitest';
import { MASK } from '../../../functions/core/redact';
import { approvalMessage, parseButtonValue, SlackAction } from '../../../functions/slack/message';
import { blockProblems } from '../../support/slack-server';
import { operation } from '../../support/records';

const pending = (args: unknown, over: Parameters<typeof operation>[0] = {}) =>
  operation({
    state: 'awaiting_approval',
    risk: 'irreversible_write',
    frozenArguments: JSON.stringify(args),
    inputHash: 'sha256:abc123',
    approvalLines: ['Charge $750.00 to cus_9'],
    policies: { call: ['permit-agents'], unattended: ['forbid-large-charges'] },
    approval: { approvalId: 'apr_op_1', state: 'pending', expiresAt: '2026-12-08T12:00:00.000Z' },
    ...over,
  });

const texts = (blocks: unknown[]) => JSON.stringify(blocks);

describe('the Slack message of an approval', () => {
  it('shows no argument when the tool’s secret fields cannot be learnt (an older operation, a function without the tool)', () => {
    const { blocks } = approvalMessage(pending({ password: 'hunter2', amount: 5 }), undefined);
    const all = texts(blocks);
    expect(all).not.toContain('hunter2');
    expect(all).not.toContain('amount: 5');
    expect(all).toContain('(not shown here: the approval page and the console show them)');
  });

  it('shows the tool, every argument, the hash, the tool’s lines, the policies and both buttons bound to the arguments', () => {
    const op = pending({ amount: 75_000, card: '4242 4242 4242 4242', password: 'hunter2', note: '<!channel> *bold*' });
    const { text, blocks } = approvalMessage(op, ['password']);
    expect(blockProblems(blocks)).toEqual([]);
    expect(text).toBe('Approval needed: owner asks to run charge_card (irreversible write) in run run_1.');
    const all = texts(blocks);
    for (const part of [
      'Approve charge_card?',
      'amount: 75000',
      `card: ${MASK}4242`,
      `password: ${MASK}`,
      'sha256:abc123',
      '• Charge $750.00 to cus_9',
    ])
      expect(all).toContain(part);
    expect(all).toContain('Policies: call permitted by \\"permit-agents\\"; unattended decided by \\"forbid-large-charges\\"');
    expect(all).not.toContain('hunter2');
    expect(all).not.toContain('4242 4242');
    // Person-supplied text is plain_text: `<!channel>` mentions no one, `*bold*` is not bold.
    const argumentSection = blocks.find((b) => JSON.stringify(b).includes('note:')) as unknown as { text: { type: string; text: string } };
    expect(argumentSection.text).toEqual(
      expect.objectContaining({ type: 'plain_text', text: expect.stringContaining('note: <!channel> *bold*') }),
    );
    const actions = blocks.find((b) => b.type === 'actions') as unknown as { elements: { action_id: string; value: string }[] };
    expect(actions.elements.map((e) => e.action_id)).toEqual([SlackAction.approve, SlackAction.deny]);
    for (const e of actions.elements) expect(parseButtonValue(e.value)).toEqual({ approvalId: 'apr_op_1', inputHash: 'sha256:abc123' });
  });

  it('folds huge arguments within Slack’s limits (50 blocks, 3000 characters a section) and says what it folded', () => {
    const args = Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`field_${i}`, 'x'.repeat(150 + (i % 100))]));
    const { text, blocks } = approvalMessage(pending(args, { toolName: 't'.repeat(300), approvalLines: ['y'.repeat(5000)] }), []);
    expect(blockProblems(blocks)).toEqual([]);
    expect(blocks.length).toBeLessThanOrEqual(50);
    expect(text.length).toBeLessThanOrEqual(3000);
    expect(texts(blocks)).toMatch(/Folded: \d+ more parts of the arguments/);
    expect(blocks.some((b) => b.type === 'actions')).toBe(true);
    // A long value is folded after 200 characters with its size.
    const long = approvalMessage(pending({ memo: 'z'.repeat(5000) }), []).blocks;
    expect(texts(long)).toContain(`memo: ${'z'.repeat(200)}… (5,000 bytes)`);
  });

  it('says who decided, then how the call ended, with no buttons', () => {
    const decided = pending(
      { amount: 1 },
      {
        approval: {
          approvalId: 'apr_op_1',
          state: 'approved',
          expiresAt: '2026-12-08T12:00:00.000Z',
          decidedBy: 'alice',
          decidedAt: '2026-12-07T13:00:00.000Z',
        },
      },
    );
    const first = approvalMessage(decided, []);
    expect(first.blocks.some((b) => b.type === 'actions')).toBe(false);
    expect(texts(first.blocks)).toContain('Approved by alice at 2026-12-07T13:00:00.000Z.');
    const settled = approvalMessage(
      {
        ...decided,
        state: 'reported',
        outcome: { kind: 'succeeded' },
        envelope: { status: 'succeeded' } as never,
      },
      [],
    );
    expect(texts(settled.blocks)).toContain('Approved by alice at 2026-12-07T13:00:00.000Z. The call ran and succeeded.');
    const expired = approvalMessage(
      pending({}, { approval: { approvalId: 'apr_op_1', state: 'expired', expiresAt: '2026-12-08T12:00:00.000Z' } }),
      [],
    );
    expect(texts(expired.blocks)).toContain('Expired at 2026-12-08T12:00:00.000Z: nobody decided in time.');
  });
});
