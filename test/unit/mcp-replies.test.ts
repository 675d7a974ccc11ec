import { describe, expect, it } from 'vitest';
import type { Envelope } from '../../functions/client';
import { hashValue } from '../../functions/core/canonical';
import { derivedCallId } from '../../functions/mcp/modern';
import { envelopeResult, MCP_REPLY_MAX_BYTES } from '../../functions/mcp/tool-calls';

const envelope = (result: unknown): Envelope =>
  ({
    status: 'succeeded',
    logical_operation_id: 'op_1',
    attempts: 1,
    result,
    allowed_next_actions: [],
  }) as unknown as Envelope;

describe("an MCP reply's size", () => {
  it('carries the result twice while the reply stays within the bound', () => {
    const reply = envelopeResult(envelope({ text: 'x'.repeat(1000) }));
    expect(reply.structuredContent).toMatchObject({ result: { text: 'x'.repeat(1000) } });
    expect(JSON.parse((reply.content as { text: string }[])[0].text)).toEqual(reply.structuredContent);
  });

  it('leaves out a result that would not fit (a 4 MiB result sent twice is over 6 MB): result_omitted with its size and hash', () => {
    const result = { text: '"'.repeat(2 * 1024 * 1024) };
    const reply = envelopeResult(envelope(result));
    const text = (reply.content as { text: string }[])[0].text;
    expect(Buffer.byteLength(JSON.stringify(reply))).toBeLessThan(MCP_REPLY_MAX_BYTES);
    expect(reply.isError).toBe(false);
    expect(reply.structuredContent).not.toHaveProperty('result');
    expect(reply.structuredContent).toMatchObject({
      status: 'succeeded',
      result_omitted: { bytes: Buffer.byteLength(JSON.stringify(result)), sha256: hashValue(result) },
    });
    expect(JSON.parse(text)).toEqual(reply.structuredContent);
  });
});

describe('the callId of a 2026-07-28 call', () => {
  it('depends on the run, the tool and the arguments (in any key order), never on the request', () => {
    const id = derivedCallId('run_1', 'charge_card', { amount: 1, customer: 'c' });
    expect(id).toMatch(/^mcp_[0-9a-f]{32}$/);
    expect(derivedCallId('run_1', 'charge_card', { customer: 'c', amount: 1 })).toBe(id);
    expect(derivedCallId('run_2', 'charge_card', { amount: 1, customer: 'c' })).not.toBe(id);
    expect(derivedCallId('run_1', 'send_email', { amount: 1, customer: 'c' })).not.toBe(id);
    expect(derivedCallId('run_1', 'charge_card', { amount: 2, customer: 'c' })).not.toBe(id);
  });
});
