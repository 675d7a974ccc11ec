import { describe, expect, it } from 'vitest';
import { compilePolicies, describePolicyProblems } from '../../functions/adapters/cedar-policies';
import { decideCall, recheckCall } from '../../functions/core/call-policy';
import { parseArguments } from '../../functions/core/canonical';
import type { Principal } from '../../functions/core/model';
import type { PolicyEvaluator } from '../../functions/core/policy-schema';
import { makeDemoTools } from '../../functions/tools/demo-tools';

const tools = makeDemoTools('http://127.0.0.1:1');
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
