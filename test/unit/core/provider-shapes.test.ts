import type Anthropic from '@anthropic-ai/sdk';
import type OpenAI from 'openai';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { anthropicTool, mcpTool, openAIChatTool, openAIResponsesTool, toStrictSchema } from '../../../functions/core/provider-shapes';
import type { ToolSpec } from '../../../functions/core/tool-spec';
import { makeDemoTools } from '../../../functions/tools/demo-tools';

const demo = makeDemoTools('http://127.0.0.1:1');
const charge = demo.find((t) => t.name === 'charge_card')!;
const withMap: ToolSpec = { ...charge, name: 'tag', inputSchema: z.strictObject({ tags: z.record(z.string(), z.string()) }) };

/** What OpenAI's strict mode demands of a schema, checked at every object level. */
function assertStrictAccepted(schema: unknown): void {
  const visit = (node: any) => {
    if (!node || typeof node !== 'object') return;
    if (Array.isArray(node)) return node.forEach(visit);
    const types = Array.isArray(node.type) ? node.type : [node.type];
    if (types.includes('object')) {
      expect(node.additionalProperties).toBe(false);
      expect([...(node.required ?? [])].sort()).toEqual(Object.keys(node.properties ?? {}).sort());
    }
    expect(node).not.toHaveProperty('default');
    Object.values(node).forEach(visit);
  };
  visit(schema);
}

describe('provider shapes', () => {
  it('OpenAI Chat Completions: strict charge_card with its optional description required but nullable', () => {
    const tool = openAIChatTool(charge);
    expectTypeOf(tool).toExtend<OpenAI.Chat.Completions.ChatCompletionFunctionTool>();
    const typed: OpenAI.Chat.Completions.ChatCompletionTool = tool;
    expect(typed).toMatchObject({ type: 'function', function: { name: 'charge_card', strict: true } });
    const parameters = tool.function.parameters as any;
    assertStrictAccepted(parameters);
    expect(parameters.required).toEqual(['amount', 'currency', 'customer', 'description', 'metadata']);
    expect(parameters.properties.description.type).toEqual(['string', 'null']);
    expect(parameters.properties.amount.type).toBe('integer');
    for (const spec of demo) assertStrictAccepted(openAIChatTool(spec).function.parameters);
  });

  it('OpenAI Responses API: the flat function tool', () => {
    const tool = openAIResponsesTool(charge);
    expectTypeOf(tool).toExtend<OpenAI.Responses.FunctionTool>();
    const typed: OpenAI.Responses.Tool = tool;
    expect(typed).toMatchObject({
      type: 'function',
      name: 'charge_card',
      strict: true,
      parameters: { type: 'object', additionalProperties: false },
    });
  });

  it('says strict: false when a schema cannot be made strict (an open map)', () => {
    expect(toStrictSchema({ type: 'object', properties: { a: { type: 'string' } }, allOf: [] })).toBeUndefined();
    const tool = openAIChatTool(withMap);
    expect(tool.function.strict).toBe(false);
    expect(tool.function.parameters).toMatchObject({ properties: { tags: { additionalProperties: { type: 'string' } } } });
  });

  it('Anthropic Messages and MCP shapes', () => {
    const tool = anthropicTool(charge);
    expectTypeOf(tool).toExtend<Anthropic.Messages.Tool>();
    const typed: Anthropic.Messages.ToolUnion = tool;
    expect(typed).toMatchObject({ name: 'charge_card', input_schema: { type: 'object', required: ['amount', 'currency', 'customer'] } });
    expect(mcpTool(charge).annotations).toEqual({ readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true });
    expect(mcpTool(demo.find((t) => t.name === 'get_order')!).annotations).toMatchObject({ readOnlyHint: true, idempotentHint: true });
    expect(mcpTool(demo.find((t) => t.name === 'send_email')!).annotations).toMatchObject({ destructiveHint: true, idempotentHint: false });
  });
});
