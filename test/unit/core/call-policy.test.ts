import { frozenCallKey } from '../../../functions/core/budgets';
import { describe, expect, it } from 'vitest';
import { argumentsHash, decideCall, previewCall } from '../../../functions/core/call-policy';
import { hashValue, parseArguments } from '../../../functions/core/canonical';
import type { Principal, RunRecord } from '../../../functions/core/model';
import { makeDemoTools } from '../../../functions/tools/demo-tools';

const tools = new Map(makeDemoTools('http://127.0.0.1:1').map((t) => [t.name, t]));
const agent: Principal = { id: 'agent', roles: ['agent'], tools: '*' };
const now = Date.parse('2026-01-01T00:00:00Z');
const run = (over: Partial<RunRecord> = {}): RunRecord => ({
  schemaVersion: 1,
  runId: 'run_1',
  principalId: 'agent',
  status: 'open',
  budgets: { maxTurns: 5, maxToolCalls: 5, maxWallClockSeconds: 3600, maxSpendCents: 100_000 },
  usage: { turns: 1, toolCalls: 1, spendCents: 0 },
  lastTurn: 1,
  createdAt: new Date(now).toISOString(),
  updatedAt: new Date(now).toISOString(),
  deadlineAt: new Date(now + 3600_000).toISOString(),
  ...over,
});
const decide = (name: string, args: unknown, over: { principal?: Principal } = {}) =>
  decideCall({
    tool: tools.get(name),
    toolName: name,
    principal: over.principal ?? agent,
    arguments: parseArguments(args),
    approvalTtlSeconds: 600,
    now,
  });

describe('decideCall: the one policy decision validation and preview share', () => {
  it('checks in order: unknown tool, authorization, arguments, approval', () => {
    expect(decide('drop_table', {})).toMatchObject({ decision: 'deny', code: 'unknown_tool' });
    // Authorization comes before arguments: a forbidden caller learns nothing about the schema.
    expect(decide('charge_card', {}, { principal: { id: 'o', roles: ['agent'], tools: ['get_order'] } })).toMatchObject({
      decision: 'deny',
      code: 'forbidden',
    });
    expect(decide('charge_card', '{not json')).toMatchObject({
      decision: 'deny',
      code: 'invalid_arguments',
      message: 'arguments is not valid JSON',
    });
    expect(decide('charge_card', { amount: -1, currency: 'USD', customer: 'c' })).toMatchObject({
      decision: 'deny',
      code: 'invalid_arguments',
      message: expect.stringContaining('amount'),
    });
    expect(decide('charge_card', { amount: 50_000, currency: 'USD', customer: 'c' })).toMatchObject({
      decision: 'require_approval',
      approvalRequired: true,
      costCents: 50_000,
    });
    expect(decide('charge_card', { amount: 1200, currency: 'USD', customer: 'c' })).toMatchObject({
      decision: 'allow',
      approvalRequired: false,
      costCents: 1200,
    });
  });

  it('freezes canonical arguments and accepts the nulls a strict-mode model sends for optional fields', () => {
    const allowed = decide('charge_card', JSON.stringify({ customer: 'c', currency: 'USD', amount: 10, description: null }));
    expect(allowed).toMatchObject({ decision: 'allow', frozenArguments: '{"amount":10,"currency":"USD","customer":"c"}' });
    if (allowed.decision === 'deny') throw new Error('unreachable');
    expect(Object.isFrozen(allowed.value)).toBe(true);
    // A null where null is the only thing missing is still wrong.
    expect(decide('charge_card', { amount: 10, currency: null, customer: 'c' })).toMatchObject({
      decision: 'deny',
      code: 'invalid_arguments',
    });
  });

  it('preview adds the run admission: a cancelled run, the tool-call and spend budgets', () => {
    const args = parseArguments({ orderId: 'ord_1' });
    const base = {
      tool: tools.get('get_order'),
      toolName: 'get_order',
      principal: agent,
      arguments: args,
      approvalTtlSeconds: 600,
      now,
      turn: 1,
    };
    const charge = {
      ...base,
      tool: tools.get('charge_card'),
      toolName: 'charge_card',
      arguments: parseArguments({ amount: 500, currency: 'USD', customer: 'c' }),
    };
    expect(previewCall({ ...charge, run: run({ budgets: { ...run().budgets, maxSpendCents: 100 } }) })).toMatchObject({
      decision: 'deny',
      code: 'budget_exhausted',
    });
    expect(previewCall({ ...base, run: run({ status: 'cancelled' }) })).toMatchObject({ decision: 'deny', code: 'cancelled' });
    expect(previewCall({ ...base, run: run({ usage: { turns: 1, toolCalls: 5, spendCents: 0 } }) })).toMatchObject({
      decision: 'deny',
      code: 'budget_exhausted',
    });
    expect(previewCall({ ...base, run: run() })).toMatchObject({ decision: 'allow' });
    // The loop fuse: the same tool and frozen arguments as many times as the run allows already.
    const fused = run({
      budgets: { ...run().budgets, maxIdenticalCalls: 2 },
      identicalCalls: { [frozenCallKey(base.toolName, '{"orderId":"ord_1"}')]: 2 },
    });
    expect(previewCall({ ...base, run: fused })).toMatchObject({ decision: 'deny', code: 'loop_detected' });
    expect(previewCall({ ...base, run: fused, arguments: parseArguments({ orderId: 'ord_2' }) })).toMatchObject({ decision: 'allow' });
  });

  it('hashes arguments as submission does, whether sent as an object or a JSON string', () => {
    const object = { b: 1, a: 'x' };
    expect(argumentsHash(parseArguments(object), object)).toBe(hashValue({ a: 'x', b: 1 }));
    expect(argumentsHash(parseArguments('{"a":"x","b":1}'), '{"a":"x","b":1}')).toBe(hashValue(object));
  });
});
