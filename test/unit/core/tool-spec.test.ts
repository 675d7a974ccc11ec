import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import {
  deadlineSecondsOf,
  defineTool,
  makeRegistry,
  MAX_TOOL_TIMEOUT_MS,
  maxResultBytesOf,
  needsApproval,
  TOOL_FUNCTION_TIMEOUT_SECONDS,
  ToolRegistrationError,
} from '../../../functions/core/tool-spec';
import { toolSpec } from '../../support/records';

describe('tool specs', () => {
  it('refuse an irreversible write that could repeat its effect unless it is attempted once', () => {
    const risky = toolSpec({ name: 'send_email', supportsIdempotency: false, reconcile: undefined, maxAttempts: 3 });
    expect(() => defineTool(risky)).toThrow(ToolRegistrationError);
    expect(() => defineTool(risky)).toThrow(/must declare maxAttempts: 1/);
    expect(defineTool({ ...risky, maxAttempts: 1 }).name).toBe('send_email');
    expect(defineTool({ ...risky, reconcile: async () => ({ found: false }) }).name).toBe('send_email');
  });

  it('refuse what cannot be described to a model or run', () => {
    expect(() => defineTool(toolSpec({ name: 'has space' }))).toThrow(/must match/);
    expect(() => defineTool(toolSpec({ maxAttempts: 0 }))).toThrow(/maxAttempts/);
    expect(() => defineTool(toolSpec({ timeoutMs: 0 }))).toThrow(/timeoutMs/);
    expect(() => defineTool(toolSpec({ maxResultBytes: 5 * 1024 * 1024 }))).toThrow(/maxResultBytes/);
    expect(() => defineTool(toolSpec({ inputSchema: z.string() as never }))).toThrow(/zod object/);
  });

  it('answer the approval policy for the frozen input', () => {
    const big = (input: { amount: number }) => input.amount >= 50_000;
    expect(needsApproval(toolSpec({ approval: big }), { amount: 50_000 })).toBe(true);
    expect(needsApproval(toolSpec({ approval: big }), { amount: 49_999 })).toBe(false);
    expect(needsApproval(toolSpec({ approval: 'always' }), {})).toBe(true);
    expect(needsApproval(toolSpec({ approval: 'never' }), {})).toBe(false);
  });

  it('default the envelope bound and the deadline from the policy', () => {
    expect(maxResultBytesOf({})).toBe(256 * 1024);
    expect(deadlineSecondsOf(toolSpec({ maxAttempts: 3, timeoutMs: 5_000 }))).toBe(15 + 120);
    expect(deadlineSecondsOf(toolSpec({ deadlineSeconds: 30 }))).toBe(30);
  });

  it('register each name once', () => {
    expect(makeRegistry([toolSpec()]).get('charge_card')?.name).toBe('charge_card');
    expect(() => makeRegistry([toolSpec(), toolSpec()])).toThrow(/charge_card/);
  });
});

describe('a tool’s timeout', () => {
  it('is refused only when no function that runs that code can wait for it', () => {
    expect(defineTool(toolSpec({ timeoutMs: MAX_TOOL_TIMEOUT_MS.execute, reconcile: undefined })).name).toBe('charge_card');
    expect(() => defineTool(toolSpec({ timeoutMs: MAX_TOOL_TIMEOUT_MS.execute + 1 }))).toThrow(/longer than the Execute function/);
    const lookup = async () => ({ found: false as const });
    expect(defineTool(toolSpec({ timeoutMs: MAX_TOOL_TIMEOUT_MS.reconcile, reconcile: lookup })).name).toBe('charge_card');
    expect(() => defineTool(toolSpec({ timeoutMs: MAX_TOOL_TIMEOUT_MS.reconcile + 1, reconcile: lookup }))).toThrow(/Reconcile function/);
  });

  it('leaves each function its step’s own time', () => {
    expect(MAX_TOOL_TIMEOUT_MS.execute).toBeLessThan(TOOL_FUNCTION_TIMEOUT_SECONDS.execute * 1000);
    expect(MAX_TOOL_TIMEOUT_MS.reconcile).toBeLessThan(TOOL_FUNCTION_TIMEOUT_SECONDS.reconcile * 1000);
  });
});
