import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { compilePolicies, describePolicyProblems } from '../../functions/adapters/cedar-policies';
import { decideCall, recheckCall } from '../../functions/core/call-policy';
import { parseArguments } from '../../functions/core/canonical';
import type { Principal } from '../../functions/core/model';
import type { PolicyEvaluator } from '../../functions/core/policy-schema';
import type { ToolSpec } from '../../functions/core/tool-spec';
import { makeDemoTools } from '../../functions/tools/demo-tools';

/** A tool of the user's own whose amount is any number (the demo's charge takes integer cents up to a bound). */
const pay: ToolSpec<{ amount: number; memo?: string; note?: string | number }> = {
  name: 'pay',
  description: 'Pay an amount, decimals allowed.',
  inputSchema: z.strictObject({ amount: z.number(), memo: z.string().optional(), note: z.union([z.string(), z.number()]).optional() }),
  outputSchema: z.object({}),
  risk: 'irreversible_write',
  timeoutMs: 1_000,
  maxAttempts: 1,
  supportsIdempotency: true,
  approval: 'never',
  execute: async () => ({}),
};
const tools = [...makeDemoTools('http://127.0.0.1:1'), pay];
const charge = tools.find((t) => t.name === 'charge_card')!;
const email = tools.find((t) => t.name === 'send_email')!;
const agent: Principal = { id: 'agent-1', roles: ['agent'], tools: '*', attributes: { tier: 'gold', customers: ['cus_1'] } };
const principals = [{ attributes: agent.attributes }];
// 2026-12-02 is a Wednesday (weekday 3).
const at = (hour: number) => Date.parse(`2026-12-02T${String(hour).padStart(2, '0')}:30:00Z`);

const SPEND_TIERS = `
@id("calls-allowed")
permit(principal, action in Action::"call", resource);

@id("refunds-unattended-to-200")
permit(principal, action == Action::"charge_card:unattended", resource)
when { context.input.amount <= 20000 };

@id("never-over-2000")
forbid(principal, action == Action::"charge_card", resource)
when { context.input.amount > 200000 };

@id("email-unattended")
permit(principal, action == Action::"send_email:unattended", resource);
`;

function evaluator(text: string): PolicyEvaluator {
  const compiled = compilePolicies(text, tools, principals);
  if (!compiled.ok) throw new Error(describePolicyProblems('policies', compiled.problems));
  return compiled.evaluator;
}

function decide(policy: PolicyEvaluator | undefined, tool: typeof charge, args: unknown, now = at(10), principal: Principal = agent) {
  return decideCall({
    tool,
    toolName: tool.name,
    principal,
    arguments: parseArguments(args),
    approvalTtlSeconds: 60,
    now,
    policy,
    run: { usage: { turns: 1, toolCalls: 2, spendCents: 500 }, createdAt: new Date(now - 90_000).toISOString() },
  });
}

const chargeOf = (amount: number) => ({ amount, currency: 'USD', customer: 'cus_1' });

describe('Cedar policies deciding calls', () => {
  it('spend tiers: unattended up to the limit, with a person above it, never beyond the ceiling', () => {
    const policy = evaluator(SPEND_TIERS);
    const small = decide(policy, charge, chargeOf(15_000));
    expect(small).toMatchObject({ decision: 'allow', policies: { call: ['calls-allowed'], unattended: ['refunds-unattended-to-200'] } });
    const middle = decide(policy, charge, chargeOf(30_000));
    expect(middle).toMatchObject({ decision: 'require_approval', policies: { call: ['calls-allowed'], unattended: [] } });
    const over = decide(policy, charge, chargeOf(250_000));
    expect(over).toMatchObject({ decision: 'deny', code: 'forbidden', policies: { call: ['never-over-2000'] } });
    expect(over.message).toBe('this principal may not call charge_card: forbidden by "never-over-2000"');
  });

  it("policies add approvals, never waive the tool's own", () => {
    const policy = evaluator(`permit(principal, action, resource);`);
    expect(decide(policy, charge, chargeOf(60_000)).decision).toBe('require_approval');
    expect(decide(policy, charge, chargeOf(100)).decision).toBe('allow');
  });

  it('default deny: with no permit the call is refused and the message says so', () => {
    const policy = evaluator(`@id("only-email") permit(principal, action == Action::"send_email", resource);`);
    const denied = decide(policy, charge, chargeOf(100));
    expect(denied).toMatchObject({
      decision: 'deny',
      code: 'forbidden',
      message: 'this principal may not call charge_card: no policy permits it',
    });
  });

  it('the roles and tool list stay the outer bound', () => {
    const policy = evaluator(`permit(principal, action, resource);`);
    const narrow: Principal = { id: 'agent-2', roles: ['agent'], tools: ['send_email'] };
    expect(decide(policy, charge, chargeOf(100), at(10), narrow)).toMatchObject({
      decision: 'deny',
      message: 'this principal may not call charge_card',
    });
  });

  it('business hours use context.now; the re-check before an attempt evaluates again at that moment', () => {
    const policy = evaluator(`
      @id("all") permit(principal, action, resource);
      @id("no-charges-after-hours") forbid(principal, action == Action::"charge_card", resource)
      when { context.now.hour < 9 || context.now.hour >= 17 || context.now.weekday == 0 || context.now.weekday == 6 };`);
    expect(decide(policy, charge, chargeOf(100), at(10)).decision).toBe('allow');
    expect(decide(policy, charge, chargeOf(100), at(18))).toMatchObject({
      decision: 'deny',
      policies: { call: ['no-charges-after-hours'] },
    });
    const run = { usage: { turns: 1, toolCalls: 1, spendCents: 0 }, createdAt: new Date(at(10)).toISOString() };
    expect(recheckCall({ tool: charge, principal: agent, frozenInput: chargeOf(100), run, now: at(16), policy })).toEqual({
      allowed: true,
    });
    expect(recheckCall({ tool: charge, principal: agent, frozenInput: chargeOf(100), run, now: at(17), policy })).toEqual({
      allowed: false,
      message: 'this principal may no longer call charge_card: forbidden by "no-charges-after-hours"',
      policies: ['no-charges-after-hours'],
    });
  });

  it('per-customer scoping through principal attributes, and context.run', () => {
    const policy = evaluator(`
      @id("own-customers") permit(principal, action == Action::"charge_card", resource)
      when { principal has customers && principal.customers.contains(context.input.customer) && context.run.spentCents < 1000 };`);
    expect(decide(policy, charge, chargeOf(100)).decision).toBe('require_approval');
    expect(decide(policy, charge, { ...chargeOf(100), customer: 'cus_2' }).decision).toBe('deny');
  });

  it('log-only policies are evaluated and reported, never enforced', () => {
    const policy = evaluator(`
      @id("all") permit(principal, action, resource);
      @id("candidate") @mode("log_only") forbid(principal, action == Action::"send_email", resource);`);
    const sent = decide(policy, email, { to: 'a@example.com', subject: 'hi', body: 'there' });
    expect(sent).toMatchObject({ decision: 'allow', shadow: { decision: 'deny', policies: ['candidate'] } });
    expect(decide(policy, charge, chargeOf(100))).not.toHaveProperty('shadow');
  });

  it('a log-only permit that alone would allow: enforced deny, and the shadow says allow', () => {
    const policy = evaluator(`
      @id("reads") permit(principal, action == Action::"get_order", resource);
      @id("candidate-email") @mode("log_only") permit(principal, action == Action::"send_email", resource);
      @id("candidate-block-reads") @mode("log_only") forbid(principal, action == Action::"get_order", resource);`);
    const email = decide(policy, tools.find((t) => t.name === 'send_email')!, { to: 'a@example.com', subject: 's', body: 'b' });
    expect(email).toMatchObject({ decision: 'deny', message: 'this principal may not call send_email: no policy permits it' });
    expect(email.shadow).toEqual({ decision: 'require_approval', policies: ['candidate-email'] });
    const read = decide(policy, tools.find((t) => t.name === 'get_order')!, { orderId: 'ord_1' });
    // Enforced: allowed by "reads" (and run with a person: nothing permits it unattended); the candidate would deny it.
    expect(read).toMatchObject({ decision: 'require_approval', policies: { call: ['reads'], unattended: [] } });
    expect(read.shadow).toEqual({ decision: 'deny', policies: ['candidate-block-reads'] });
  });

  it('a policy naming a field the tool does not take is refused at load with its line and reason', () => {
    const compiled = compilePolicies(
      `permit(principal, action, resource);\n\npermit(principal, action == Action::"charge_card", resource)\nwhen { context.input.amout > 1 };`,
      tools,
      principals,
    );
    expect(compiled.ok).toBe(false);
    const text = describePolicyProblems('policies.cedar', compiled.ok ? [] : compiled.problems);
    expect(text).toMatch(/^policies\.cedar:[34]: .*amout/);
    const syntax = compilePolicies(`permit(principal, action, resource)\nwhen { 1 + };`, tools, principals);
    expect(syntax.ok ? '' : describePolicyProblems('p', syntax.problems)).toMatch(/^p:2: /);
  });
});

const AMOUNT_BOUNDS = `
@id("all") permit(principal, action, resource);
@id("all-unattended") permit(principal, action in Action::"call_unattended", resource);
@id("pay-up-to-1000") forbid(principal, action == Action::"pay", resource) when { context.input.amount.greaterThan(decimal("1000.0")) };
@id("pay-no-negatives") forbid(principal, action == Action::"pay", resource) when { context.input.amount.lessThan(decimal("0.0")) };
@id("no-refund-subject") forbid(principal, action == Action::"send_email", resource) when { context.input.subject == "refund" };
`;

describe('decisions fail closed', () => {
  const paying = (amount: number, policy = evaluator(AMOUNT_BOUNDS)) => decide(policy, pay as typeof charge, { amount });

  it('a number the policies can represent exactly is compared as sent, however large', () => {
    // 9e14 was left out of context.input (the forbid errored, Cedar skipped it, the permit won).
    expect(paying(9e14)).toMatchObject({ decision: 'deny', code: 'forbidden', policies: { call: ['pay-up-to-1000'] } });
    expect(paying(-9e14)).toMatchObject({ decision: 'deny', code: 'forbidden', policies: { call: ['pay-no-negatives'] } });
    expect(paying(922337203685477.5)).toMatchObject({ decision: 'deny', code: 'forbidden' });
    expect(paying(1000.0001)).toMatchObject({ decision: 'deny', code: 'forbidden', policies: { call: ['pay-up-to-1000'] } });
    expect(paying(-0.0001)).toMatchObject({ decision: 'deny', code: 'forbidden', policies: { call: ['pay-no-negatives'] } });
    expect(paying(999.9999)).toMatchObject({ decision: 'allow' });
    expect(paying(0)).toMatchObject({ decision: 'allow' });
  });

  it('a number it cannot represent exactly is refused as invalid_arguments, naming the field, never echoing the value', () => {
    for (const amount of [1e15, 2 ** 53 - 1, -1e15, 922337203685477.6, 1e300]) {
      const refused = paying(amount);
      expect(refused, String(amount)).toMatchObject({ decision: 'deny', code: 'invalid_arguments' });
      expect(refused.message).toBe(
        'amount: the policies cannot compare this number exactly (a decimal has at most 4 places and lies within ±922337203685477.5807)',
      );
    }
    // Rounded to 1000.0 it passed `> 1000`, while the tool received 1000.00001.
    expect(paying(1000.00001)).toMatchObject({ decision: 'deny', code: 'invalid_arguments', message: expect.stringMatching(/^amount: /) });
    expect(paying(1e-7)).toMatchObject({ decision: 'deny', code: 'invalid_arguments' });
  });

  it('only where policies are configured, and only for fields Cedar sees', () => {
    expect(decide(undefined, pay as typeof charge, { amount: 1e15 })).toMatchObject({ decision: 'allow' });
    expect(decide(evaluator(AMOUNT_BOUNDS), pay as typeof charge, { amount: 5, note: 1e300 })).toMatchObject({ decision: 'allow' });
    expect(decide(evaluator(AMOUNT_BOUNDS), pay as typeof charge, { amount: 5, note: 'a\ud800' })).toMatchObject({ decision: 'allow' });
  });

  it('a lone UTF-16 surrogate is refused as invalid_arguments, not thrown from the engine', () => {
    const policy = evaluator(AMOUNT_BOUNDS);
    const lone = decide(policy, email, { to: 'a@example.com', subject: 'hi \ud800', body: 'there' });
    expect(lone).toEqual(
      expect.objectContaining({
        decision: 'deny',
        code: 'invalid_arguments',
        message: 'subject: the policies cannot read this string (it holds a lone UTF-16 surrogate)',
      }),
    );
    expect(decide(policy, pay as typeof charge, { amount: 5, memo: '\udc00' })).toMatchObject({ code: 'invalid_arguments' });
    // A well-formed pair is a character like any other.
    expect(decide(policy, email, { to: 'a@example.com', subject: 'hi \ud83d\ude00', body: 'there' })).toMatchObject({ decision: 'allow' });
  });

  const OVERFLOW = `
@id("all") permit(principal, action, resource);
@id("all-unattended") permit(principal, action in Action::"call_unattended", resource);
@id("scaled-cap") forbid(principal, action == Action::"charge_card", resource) when { context.input.amount * 1000000000000000 > 5 };
`;
  const overflowReason = 'integer overflow while attempting to multiply the values … and …';

  it('an enforced policy that errors on the request refuses the call, naming the policy and the reason', () => {
    // Cedar skips a policy that errors: the permit allowed the charge.
    const refused = decide(evaluator(OVERFLOW), charge, chargeOf(10_000));
    expect(refused).toMatchObject({ decision: 'deny', code: 'forbidden', policies: { call: ['scaled-cap'] } });
    expect(refused.message).toBe(`this principal may not call charge_card: "scaled-cap" could not be evaluated: ${overflowReason}`);
    expect(decide(evaluator(OVERFLOW), charge, chargeOf(1))).toMatchObject({ decision: 'deny', policies: { call: ['scaled-cap'] } });
    // A permit that errors refuses too, even where another permit applies.
    const permitErrs = evaluator(`
      @id("all") permit(principal, action, resource);
      @id("scaled-permit") permit(principal, action == Action::"charge_card", resource) when { context.input.amount * 1000000000000000 > 5 };`);
    expect(decide(permitErrs, charge, chargeOf(10_000))).toMatchObject({
      decision: 'deny',
      code: 'forbidden',
      policies: { call: ['scaled-permit'] },
    });
    // The unattended question too: an error there refuses the call rather than letting it run unattended.
    const unattendedErrs = evaluator(`
      @id("all") permit(principal, action, resource);
      @id("scaled-unattended") forbid(principal, action == Action::"charge_card:unattended", resource) when { context.input.amount * 1000000000000000 > 5 };`);
    expect(decide(unattendedErrs, charge, chargeOf(10_000))).toMatchObject({
      decision: 'deny',
      code: 'forbidden',
      message: expect.stringContaining('"scaled-unattended" could not be evaluated: integer overflow'),
    });
    // A forbid that applies still decides by itself.
    const both = evaluator(`${OVERFLOW}\n@id("no-charges") forbid(principal, action == Action::"charge_card", resource);`);
    expect(decide(both, charge, chargeOf(10_000))).toMatchObject({ decision: 'deny', policies: { call: ['no-charges'] } });
  });

  it('a log-only policy that errors is reported in the shadow, never enforced', () => {
    const policy = evaluator(`
      @id("all") permit(principal, action, resource);
      @id("all-unattended") permit(principal, action in Action::"call_unattended", resource);
      @id("candidate") @mode("log_only") forbid(principal, action == Action::"charge_card", resource) when { context.input.amount * 1000000000000000 > 5 };`);
    expect(decide(policy, charge, chargeOf(10_000))).toMatchObject({
      decision: 'allow',
      policies: { call: ['all'] },
      shadow: { decision: 'deny', policies: ['candidate'] },
    });
  });

  it('the re-check before an attempt fails closed the same way', () => {
    const run = { usage: { turns: 1, toolCalls: 1, spendCents: 0 }, createdAt: new Date(at(10)).toISOString() };
    const recheck = (policy: PolicyEvaluator, tool: typeof charge, frozenInput: unknown) =>
      recheckCall({ tool, principal: agent, frozenInput, run, now: at(10), policy });
    expect(recheck(evaluator(OVERFLOW), charge, chargeOf(10_000))).toEqual({
      allowed: false,
      message: `this principal may no longer call charge_card: "scaled-cap" could not be evaluated: ${overflowReason}`,
      policies: ['scaled-cap'],
    });
    // Frozen before policies existed: a value they cannot represent is refused, never left out.
    expect(recheck(evaluator(AMOUNT_BOUNDS), pay as typeof charge, { amount: 1e15 })).toEqual({
      allowed: false,
      message:
        'this principal may no longer call pay: amount: the policies cannot compare this number exactly (a decimal has at most 4 places and lies within ±922337203685477.5807)',
    });
    expect(recheck(evaluator(AMOUNT_BOUNDS), email, { to: 'a@example.com', subject: '\ud800', body: 'b' })).toMatchObject({
      allowed: false,
    });
    expect(recheck(evaluator(AMOUNT_BOUNDS), pay as typeof charge, { amount: 9e14 })).toMatchObject({
      allowed: false,
      policies: ['pay-up-to-1000'],
    });
  });

  it('principal attributes the policies cannot represent are refused at load, naming the principal', () => {
    const refused = compilePolicies(AMOUNT_BOUNDS, tools, [
      { id: 'a', attributes: { limit: 5 } },
      { id: 'b', attributes: { limit: 2.5, nick: 'x\udfff' } },
      { id: 'c', attributes: { limit: 'high' } },
      { id: 'd', attributes: { limit: 1e300 } },
    ]);
    expect(refused.ok ? [] : refused.problems.map((p) => p.message)).toEqual([
      'principal "b": attribute nick: the policies cannot read this string (it holds a lone UTF-16 surrogate)',
      'principal "c": attribute limit: a string where other principals have a number',
      'principal "d": attribute limit: the policies cannot compare this number exactly (a decimal has at most 4 places and lies within ±922337203685477.5807)',
    ]);
    // Integers and decimals mix: the attribute is a decimal for every principal.
    const mixed = compilePolicies(
      `@id("all") permit(principal, action, resource) when { principal has limit && principal.limit.greaterThan(decimal("3.0")) };`,
      tools,
      [
        { id: 'a', attributes: { limit: 5 } },
        { id: 'b', attributes: { limit: 2.5 } },
      ],
    );
    if (!mixed.ok) throw new Error(describePolicyProblems('p', mixed.problems));
    expect(decide(mixed.evaluator, charge, chargeOf(100), at(10), { ...agent, id: 'a', attributes: { limit: 5 } }).decision).not.toBe(
      'deny',
    );
    expect(decide(mixed.evaluator, charge, chargeOf(100), at(10), { ...agent, id: 'b', attributes: { limit: 2.5 } }).decision).toBe('deny');
  });
});
