import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { escapeHtml } from '../../functions/html/safe-html';
import { preferredWaitSeconds } from '../../functions/api/tool-call-route';
import { decideAfterAttempt, reconcilePlanOf } from '../../functions/core/attempt-protocol';
import { signLink, verifyLink } from '../../functions/core/approval-link';
import { envelopeFor } from '../../functions/core/envelope';
import { operationIdFor } from '../../functions/core/ids';
import type { OperationRecord } from '../../functions/core/model';
import { storedResultOf } from '../../functions/core/result-record';
import { checkToolSpec, makeRegistry, needsApproval, ToolRegistrationError, type ToolSpec } from '../../functions/core/tool-spec';
import { retryAfterSeconds } from '../../functions/tools/http';
import { makeDemoTools } from '../../functions/tools/demo-tools';

const base: ToolSpec = {
  name: 'x',
  description: 'x',
  inputSchema: z.object({}),
  outputSchema: z.unknown(),
  risk: 'irreversible_write',
  timeoutMs: 1000,
  maxAttempts: 3,
  supportsIdempotency: false,
  approval: 'never',
  execute: async () => null,
};

describe('tool registration', () => {
  it('refuses an irreversible write that could repeat without idempotency or a reconcile function', () => {
    expect(() => checkToolSpec(base)).toThrow(ToolRegistrationError);
    expect(() => checkToolSpec({ ...base, maxAttempts: 1 })).not.toThrow();
    expect(() => checkToolSpec({ ...base, supportsIdempotency: true })).not.toThrow();
    expect(() => checkToolSpec({ ...base, reconcile: async () => ({ found: false }) })).not.toThrow();
    expect(() => checkToolSpec({ ...base, name: 'bad name' })).toThrow(ToolRegistrationError);
    expect(() =>
      makeRegistry([
        { ...base, maxAttempts: 1 },
        { ...base, maxAttempts: 1 },
      ]),
    ).toThrow(/twice/);
  });

  it('registers the demo tools with their normative policies', () => {
    const tools = makeRegistry(makeDemoTools('http://sandbox'));
    const charge = tools.get('charge_card')!;
    expect(charge).toMatchObject({ risk: 'irreversible_write', supportsIdempotency: true });
    expect(charge.reconcile).toBeTypeOf('function');
    expect(needsApproval(charge, { amount: 49_999 })).toBe(false);
    expect(needsApproval(charge, { amount: 50_000 })).toBe(true);
    expect(tools.get('send_email')).toMatchObject({ risk: 'irreversible_write', supportsIdempotency: false, maxAttempts: 1 });
    expect(tools.get('update_shipping_address')!.lockKey!({ orderId: 'ord_3' })).toBe('ord_3');
    expect(tools.get('get_order')!.risk).toBe('read');
    expect(reconcilePlanOf(charge)).toBe('lookup');
    expect(reconcilePlanOf(tools.get('send_email')!)).toBe('review');
    expect(reconcilePlanOf(tools.get('update_shipping_address')!)).toBe('replay');
  });
});

describe('attempt policy', () => {
  const op = { attempts: 1, deadlineAt: new Date(Date.now() + 600_000).toISOString() } as OperationRecord;
  const retryable = { kind: 'failed_retryable', code: 'upstream_unavailable', message: 'm' } as const;
  it('retries only within maxAttempts and the deadline', () => {
    const tool = { ...base, supportsIdempotency: true };
    expect(decideAfterAttempt(tool, op, retryable, Date.now(), () => 0.5)).toMatchObject({ next: 'retry' });
    expect(decideAfterAttempt(tool, { ...op, attempts: 3 }, retryable, Date.now(), () => 0.5)).toMatchObject({
      next: 'record',
      outcome: { kind: 'failed_permanent', code: 'upstream_unavailable' },
    });
    expect(decideAfterAttempt(tool, { ...op, deadlineAt: new Date().toISOString() }, retryable, Date.now(), () => 0.5)).toMatchObject({
      next: 'record',
    });
    expect(
      decideAfterAttempt(tool, op, { kind: 'outcome_unknown', code: 'timeout_unknown', message: '' }, Date.now(), Math.random),
    ).toEqual({ next: 'reconcile' });
  });
});

describe('approval links', () => {
  const claims = { approvalId: 'apr_1', approverId: 'alice', expiresAt: 2_000, inputHash: 'sha256:a' };
  it('verify for the same operation version, approver and expiry only', () => {
    const sig = signLink('s'.repeat(32), claims);
    expect(verifyLink('s'.repeat(32), sig, claims, 1_000)).toEqual({ ok: true, approverId: 'alice', expiresAt: 2_000 });
    expect(verifyLink('s'.repeat(32), sig, { ...claims, inputHash: 'sha256:b' }, 1_000)).toEqual({ ok: false, reason: 'bad_signature' });
    expect(verifyLink('t'.repeat(32), sig, claims, 1_000)).toEqual({ ok: false, reason: 'bad_signature' });
    expect(verifyLink('s'.repeat(32), sig, claims, 2_000)).toEqual({ ok: false, reason: 'expired' });
    expect(verifyLink('s'.repeat(32), 'garbage', claims, 1_000)).toEqual({ ok: false, reason: 'malformed' });
    const forged = `${Buffer.from(JSON.stringify({ a: 'mallory', e: 2000 })).toString('base64url')}.${sig.split('.')[1]}`;
    expect(verifyLink('s'.repeat(32), forged, claims, 1_000)).toEqual({ ok: false, reason: 'bad_signature' });
    // Trailing garbage, a second MAC, or anything around the two parts: refused.
    for (const bad of [`${sig}.garbage`, `${sig}.`, `.${sig}`, `${sig}${sig}`, `${sig} `, `${sig}==`])
      expect(verifyLink('s'.repeat(32), bad, claims, 1_000)).toEqual({ ok: false, reason: 'malformed' });
    // Payloads that decode to JSON but not to an object of claims: refused, never thrown.
    for (const payload of [
      'null',
      '[]',
      '1',
      '"x"',
      'true',
      '{"a":"alice","e":2000.5}',
      '{"a":"alice","e":1e400}',
      '{"a":null,"e":2000}',
    ]) {
      const odd = `${Buffer.from(payload).toString('base64url')}.${sig.split('.')[1]}`;
      expect(verifyLink('s'.repeat(32), odd, claims, 1_000)).toEqual({ ok: false, reason: 'malformed' });
    }
  });

  it('has one spelling: the signed claims with a field more, reordered or respaced are refused', () => {
    const sig = signLink('s'.repeat(32), claims);
    const mac = sig.split('.')[1];
    for (const payload of [
      '{"a":"alice","e":2000,"x":1}',
      '{"a":"alice","e":2000,"a":"alice"}',
      '{"e":2000,"a":"alice"}',
      '{"a": "alice", "e": 2000}',
      '{"a":"alice","e":2000} ',
      '{"a":"alice","e":2000.0}',
      '{"a":"alice","e":2e3}',
    ]) {
      const variant = `${Buffer.from(payload).toString('base64url')}.${mac}`;
      expect(verifyLink('s'.repeat(32), variant, claims, 1_000), payload).toEqual({ ok: false, reason: 'malformed' });
    }
    // Base64 with padding bits set differently decodes to the same bytes: still another spelling.
    const [payload] = sig.split('.');
    const last = payload.at(-1)!;
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const twin = alphabet[alphabet.indexOf(last) ^ 1];
    if (Buffer.from(`${payload.slice(0, -1)}${twin}`, 'base64url').equals(Buffer.from(payload, 'base64url')))
      expect(verifyLink('s'.repeat(32), `${payload.slice(0, -1)}${twin}.${mac}`, claims, 1_000)).toEqual({
        ok: false,
        reason: 'malformed',
      });
    expect(verifyLink('s'.repeat(32), sig, claims, 1_000)).toMatchObject({ ok: true });
  });

  it('escapes everything that reaches HTML', () => {
    expect(escapeHtml(`<a href="x" onclick='y'>&</a>`)).toBe('&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;&lt;/a&gt;');
  });
});

describe('small contracts', () => {
  it('derives one operation id per (runId, callId)', () => {
    expect(operationIdFor('run_a', 'call_1')).toBe(operationIdFor('run_a', 'call_1'));
    expect(operationIdFor('run_a', 'call_1')).not.toBe(operationIdFor('run_b', 'call_1'));
    expect(operationIdFor('run_a', 'call_1')).toMatch(/^op_[A-Za-z0-9]{26}$/);
  });

  it('parses Prefer: wait=N within 0..25, default 10', () => {
    expect(preferredWaitSeconds(undefined)).toBe(10);
    expect(preferredWaitSeconds('wait=3')).toBe(3);
    expect(preferredWaitSeconds('respond-async, wait=100')).toBe(25);
    expect(preferredWaitSeconds('wait=0')).toBe(0);
  });

  it('parses Retry-After in seconds or as a date', () => {
    expect(retryAfterSeconds('5')).toBe(5);
    expect(retryAfterSeconds(new Date(10_000).toUTCString(), 1_000)).toBe(9);
    expect(retryAfterSeconds('soon')).toBeUndefined();
  });

  it('builds stored envelopes that point at the result instead of copying it', () => {
    const op = { callId: 'call_1', operationId: 'op_1' };
    expect(envelopeFor(op, { kind: 'succeeded', result: storedResultOf({ a: 1 }) })).toEqual({
      status: 'succeeded',
      call_id: 'call_1',
      logical_operation_id: 'op_1',
      message: 'the tool call succeeded',
      allowed_next_actions: ['continue'],
    });
    const unknown = envelopeFor(op, { kind: 'outcome_unknown', code: 'timeout_unknown', message: 'no answer' });
    expect(unknown).toMatchObject({
      status: 'outcome_unknown',
      code: 'timeout_unknown',
      allowed_next_actions: ['check_status', 'request_human_review'],
    });
    expect(unknown).not.toHaveProperty('result');
    expect(envelopeFor(op, { kind: 'failed_permanent', code: 'permanent_failure', message: 'm' }).status).toBe('failed');
  });
});
