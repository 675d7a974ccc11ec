import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { argumentsForApprover } from '../../functions/core/approval-view';
import { decideCall, validationOf } from '../../functions/core/call-policy';
import { parseArguments } from '../../functions/core/canonical';
import { describeTool, ToolDescriptionSchema } from '../../functions/core/tool-invocation';
import { defineTool, type ToolSpec } from '../../functions/core/tool-spec';
import { describedSpec } from '../../functions/tools/described-tools';

const base = {
  name: 'create_user',
  description: 'Creates a user',
  inputSchema: z.object({
    user: z.string(),
    password: z.string(),
    card: z.object({ number: z.string(), cvc: z.string() }),
    devices: z.array(z.object({ pin: z.string() })),
  }),
  outputSchema: z.object({ id: z.string() }),
  risk: 'irreversible_write',
  timeoutMs: 1000,
  maxAttempts: 1,
  supportsIdempotency: false,
  approval: 'always',
  execute: async () => ({ id: 'u1' }),
} satisfies ToolSpec;

describe('a tool’s secretFields', () => {
  it('are paths in the approver view’s notation, carried by the description to the functions without the tools module', () => {
    const spec = defineTool({ ...base, secretFields: ['password', 'card.cvc', 'devices[].pin'] });
    const described = ToolDescriptionSchema.parse(JSON.parse(JSON.stringify(describeTool(spec))));
    expect(described.secretFields).toEqual(['password', 'card.cvc', 'devices[].pin']);
    const registered = describedSpec(described);
    expect(registered.secretFields).toEqual(['password', 'card.cvc', 'devices[].pin']);
    const args = { user: 'ann', password: 'hunter2', card: { number: '4242424242424242', cvc: '123' }, devices: [{ pin: '0000' }] };
    expect(argumentsForApprover(args, registered.secretFields).map((f) => `${f.path}=${f.text}`)).toEqual([
      'user=ann',
      'password=••••',
      'card.number=••••4242',
      'card.cvc=••••',
      'devices[0].pin=••••',
    ]);
    // A tool without them describes none (an older description stays valid).
    expect('secretFields' in describeTool(defineTool(base))).toBe(false);
  });

  it('are refused at registration when malformed, repeated, or naming a field the input does not have', () => {
    const refuse = (secretFields: unknown, message: string) =>
      expect(() => defineTool({ ...base, secretFields } as ToolSpec)).toThrow(message);
    refuse('password', 'create_user: secretFields must be a list of field paths');
    refuse([''], 'create_user: secretFields[0] "" is not a field path');
    refuse(['card..cvc'], 'create_user: secretFields[0] "card..cvc" is not a field path');
    refuse(['devices[x].pin'], 'create_user: secretFields[0] "devices[x].pin" is not a field path');
    refuse(['password', 'password'], 'create_user: secretFields[1] "password" is listed twice');
    refuse(['pasword'], 'create_user: secretFields[0] "pasword" names no field of the input schema (user, password, card, devices)');
    refuse(
      Array.from({ length: 101 }, (_, i) => `f${i}`),
      'create_user: secretFields holds at most 100 paths',
    );
    expect(() => defineTool({ ...base, secretFields: ['devices[0].pin', 'card'] })).not.toThrow();
  });

  it('are kept with an operation a person must approve, for the functions that notify without loading the tools', () => {
    const decide = (spec: ToolSpec) =>
      validationOf(
        decideCall({
          tool: spec,
          toolName: spec.name,
          principal: { id: 'agent', roles: ['agent'], tools: '*' },
          arguments: parseArguments({ user: 'ann', password: 'p', card: { number: '1', cvc: '2' }, devices: [] }),
          approvalTtlSeconds: 600,
          now: Date.parse('2026-01-01T00:00:00Z'),
        }),
      );
    expect(decide(defineTool({ ...base, secretFields: ['password'] }))).toMatchObject({
      approvalRequired: true,
      secretFields: ['password'],
    });
    // None declared is kept as none: a function without the tool then knows there is nothing to mask.
    expect(decide(defineTool(base))).toMatchObject({ secretFields: [] });
    expect('secretFields' in decide(defineTool({ ...base, approval: 'never', secretFields: ['password'] }))).toBe(false);
  });
});
