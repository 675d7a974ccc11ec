import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  cedarRequestOf,
  cedarTypeOf,
  cedarValueOf,
  inputTypeOf,
  nowFacts,
  policySchema,
  principalAttributeTypes,
  runFactsOf,
} from '../../../functions/core/policy-schema';

const tool = {
  name: 'refund',
  risk: 'irreversible_write' as const,
  supportsIdempotency: true,
  inputSchema: z.strictObject({
    amount: z.number().int(),
    rate: z.number(),
    currency: z.enum(['USD', 'EUR']),
    note: z.string().optional(),
    tags: z.array(z.string()).default([]),
    either: z.union([z.string(), z.number()]).optional(),
  }),
};

describe('the policy schema and values', () => {
  it('types context.input from the tool schema: integers as Long, other numbers as decimal, unions left out', () => {
    expect(inputTypeOf(tool)).toEqual({
      type: 'Record',
      attributes: {
        amount: { type: 'Long' },
        rate: { type: 'Extension', name: 'decimal' },
        currency: { type: 'String' },
        note: { type: 'String', required: false },
        tags: { type: 'Set', element: { type: 'String' } },
      },
    });
    expect(cedarTypeOf({ anyOf: [{ type: 'string' }, { type: 'null' }] })).toBeUndefined();
  });

  it('converts values by their type: decimals to four places, nulls and misfits left out', () => {
    const type = inputTypeOf(tool);
    expect(cedarValueOf(type, { amount: 5, rate: 1, currency: 'USD', note: null, tags: ['a'], either: 'x' })).toEqual({
      amount: 5,
      rate: { __extn: { fn: 'decimal', arg: '1.0' } },
      currency: 'USD',
      tags: ['a'],
    });
    expect(cedarValueOf({ type: 'Extension', name: 'decimal' }, 0.12345)).toEqual({ __extn: { fn: 'decimal', arg: '0.1235' } });
    expect(cedarValueOf({ type: 'Extension', name: 'decimal' }, 1e300)).toBeUndefined();
    expect(cedarValueOf({ type: 'Long' }, 1.5)).toBeUndefined();
  });

  it('declares two actions per tool in their groups, and the principal attributes the configuration uses', () => {
    const attributes = principalAttributeTypes([{ attributes: { tier: 'gold', limit: 5 } }, { attributes: { regions: ['eu'] } }]);
    const schema = policySchema([tool], attributes) as { '': { actions: Record<string, unknown>; entityTypes: Record<string, unknown> } };
    expect(Object.keys(schema[''].actions)).toEqual(['call', 'call_unattended', 'refund', 'refund:unattended']);
    expect(schema[''].actions['refund:unattended']).toMatchObject({ memberOf: [{ id: 'call_unattended' }] });
    expect(schema[''].entityTypes.Principal).toEqual({
      shape: {
        type: 'Record',
        attributes: {
          roles: { type: 'Set', element: { type: 'String' } },
          tier: { type: 'String', required: false },
          limit: { type: 'Long', required: false },
          regions: { type: 'Set', element: { type: 'String' }, required: false },
        },
      },
    });
  });

  it('gives the run before the call and the UTC hour and weekday', () => {
    const now = Date.parse('2026-12-06T23:10:00Z'); // a Sunday
    expect(nowFacts(now)).toEqual({ hour: 23, weekday: 0 });
    expect(runFactsOf({ usage: { turns: 2, toolCalls: 3, spendCents: 400 }, createdAt: '2026-12-06T23:08:30Z' }, now)).toEqual({
      turns: 2,
      toolCalls: 3,
      spentCents: 400,
      elapsedSeconds: 90,
    });
    expect(runFactsOf(undefined, now)).toEqual({ turns: 0, toolCalls: 0, spentCents: 0, elapsedSeconds: 0 });
  });

  it('builds the request with the principal, the tool and the action in its group', () => {
    const request = cedarRequestOf(
      {
        principal: { id: 'a', roles: ['agent'], tools: '*', attributes: { tier: 'gold', other: 1 } },
        tool,
        action: 'unattended',
        input: { amount: 1 },
        run: { turns: 0, toolCalls: 0, spentCents: 0, elapsedSeconds: 0 },
        now: 0,
      },
      { tier: { type: 'String' } },
    );
    expect(request.action).toEqual({ type: 'Action', id: 'refund:unattended' });
    expect(request.entities).toContainEqual({
      uid: { type: 'Principal', id: 'a' },
      attrs: { roles: ['agent'], tier: 'gold' },
      parents: [],
    });
    expect(request.entities).toContainEqual({
      uid: { type: 'Action', id: 'refund:unattended' },
      attrs: {},
      parents: [{ type: 'Action', id: 'call_unattended' }],
    });
    expect(request.context.input).toEqual({ amount: 1 });
  });
});
