import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  cedarRequestOf,
  cedarTypeOf,
  cedarValueOf,
  inputTypeOf,
  nowFacts,
  policySchema,
  principalAttributeProblems,
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

  it('converts values by their type, exactly or not at all, naming the path of what does not fit', () => {
    const type = inputTypeOf(tool);
    // Fields Cedar does not type (the union) are not its to see; absent optionals stay absent.
    expect(cedarValueOf(type, { amount: 5, rate: 1, currency: 'USD', tags: ['a'], either: 1e300 })).toEqual({
      ok: true,
      value: { amount: 5, rate: { __extn: { fn: 'decimal', arg: '1.0' } }, currency: 'USD', tags: ['a'] },
    });
    const decimal = { type: 'Extension', name: 'decimal' } as const;
    const arg = (value: number) => {
      const converted = cedarValueOf(decimal, value);
      return converted.ok ? (converted.value as { __extn: { arg: string } }).__extn.arg : converted.reason;
    };
    expect([0.1234, -0.5, 9e14, 922337203685477.5, -922337203685477.5, -0, 1e20 / 1e6].map(arg)).toEqual([
      '0.1234',
      '-0.5',
      '900000000000000.0',
      '922337203685477.5',
      '-922337203685477.5',
      '0.0',
      '100000000000000.0',
    ]);
    const notDecimal =
      'the policies cannot compare this number exactly (a decimal has at most 4 places and lies within ±922337203685477.5807)';
    for (const value of [
      0.12345,
      1000.00001,
      1e-7,
      922337203685477.6,
      1e15,
      2 ** 53 - 1,
      -1e15,
      1e300,
      Number.NaN,
      Number.POSITIVE_INFINITY,
    ])
      expect(cedarValueOf(decimal, value), String(value)).toEqual({ ok: false, path: '', reason: notDecimal });
    expect(cedarValueOf({ type: 'Long' }, 2 ** 53 - 1)).toEqual({ ok: true, value: 2 ** 53 - 1 });
    expect(cedarValueOf({ type: 'Long' }, 2 ** 53)).toMatchObject({ ok: false, reason: expect.stringContaining('integer') });
    expect(cedarValueOf({ type: 'Long' }, 1.5)).toMatchObject({ ok: false });
    expect(cedarValueOf(type, { amount: 5, rate: 1, currency: 'USD', note: 'a\udbff', tags: [] })).toEqual({
      ok: false,
      path: 'note',
      reason: 'the policies cannot read this string (it holds a lone UTF-16 surrogate)',
    });
    expect(cedarValueOf(type, { amount: 5, rate: 1, currency: 'USD', tags: ['a', '\udc00b'] })).toMatchObject({
      ok: false,
      path: 'tags.1',
    });
    // A null where Cedar has a type is not an absent optional: zod would not have let it through.
    expect(cedarValueOf(type, { amount: 5, rate: 1, currency: 'USD', note: null, tags: [] })).toMatchObject({ ok: false, path: 'note' });
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
      modelSpentCents: 0,
      toolSpentCents: 400,
      elapsedSeconds: 90,
    });
    // Model spend in micro-cents: the total and the model part are counted up to the next whole cent.
    const withModel = { turns: 2, toolCalls: 3, spendCents: 400, modelSpendMicros: 1_250_000, heldMicros: 401_250_000 };
    expect(runFactsOf({ usage: withModel, createdAt: '2026-12-06T23:08:30Z' }, now)).toMatchObject({
      spentCents: 402,
      modelSpentCents: 2,
      toolSpentCents: 400,
    });
    expect(runFactsOf(undefined, now)).toEqual({
      turns: 0,
      toolCalls: 0,
      spentCents: 0,
      modelSpentCents: 0,
      toolSpentCents: 0,
      elapsedSeconds: 0,
    });
  });

  it('builds the request with the principal, the tool and the action in its group', () => {
    const built = cedarRequestOf(
      {
        principal: { id: 'a', roles: ['agent'], tools: '*', attributes: { tier: 'gold', other: 1 } },
        tool,
        action: 'unattended',
        input: { amount: 1 },
        run: { turns: 0, toolCalls: 0, spentCents: 0, modelSpentCents: 0, toolSpentCents: 0, elapsedSeconds: 0 },
        now: 0,
      },
      { tier: { type: 'String' } },
    );
    if (!built.ok) throw new Error(built.misfit.reason);
    const { request } = built;
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

  it('refuses a request holding what the schema cannot represent, saying whether the input or the principal holds it', () => {
    const request = (principal: { id: string; attributes?: Record<string, number | string> }, input: unknown) =>
      cedarRequestOf(
        { principal: { roles: ['agent'], tools: '*', ...principal }, tool, action: 'call', input, run: runFactsOf(undefined, 0), now: 0 },
        { limit: { type: 'Extension', name: 'decimal' } },
      );
    expect(request({ id: 'a' }, { amount: 2 ** 53, rate: 1, currency: 'USD' })).toMatchObject({
      ok: false,
      misfit: { in: 'input', path: 'amount' },
    });
    expect(request({ id: 'a', attributes: { limit: 1e16 } }, {})).toMatchObject({ ok: false, misfit: { in: 'principal', path: 'limit' } });
    expect(request({ id: 'oauth:\ud800' }, {})).toMatchObject({ ok: false, misfit: { in: 'principal', path: 'id' } });
  });

  it('types principal attributes so that integers and decimals mix, and names the principals the policies cannot see exactly', () => {
    const principals = [
      { id: 'a', attributes: { limit: 5, tier: 'gold' } },
      { id: 'b', attributes: { limit: 0.25, tier: 3 } },
    ];
    const types = principalAttributeTypes(principals);
    expect(types).toEqual({ limit: { type: 'Extension', name: 'decimal' }, tier: { type: 'String' } });
    expect(principalAttributeProblems(principals, types)).toEqual([
      'principal "b": attribute tier: a number where other principals have a string',
    ]);
  });
});
