import { z } from 'zod';
import { replaySafe } from './record-predicates';
import type { ToolSpec } from './tool-spec';
import { RunnerError } from './errors';

/**
 * Tool definitions in each provider's own shape, from the tool's one zod schema. The shapes are typed
 * structurally here and checked against the providers' SDK types in the tests, so the runtime code
 * does not depend on any provider SDK.
 */

type JsonSchema = { [key: string]: unknown };

/** The arguments a model must send, as JSON Schema (input side: defaults make a field optional). */
export function parametersOf(spec: ToolSpec): JsonSchema {
  const { $schema: _drop, ...schema } = z.toJSONSchema(spec.inputSchema, {
    target: 'draft-2020-12',
    io: 'input',
    unrepresentable: 'any',
  }) as JsonSchema;
  return schema;
}

// Keywords OpenAI's strict mode refuses (its documented subset); a schema using one is sent with strict: false.
const NOT_STRICTABLE = [
  'allOf',
  'not',
  'if',
  'then',
  'else',
  'dependentRequired',
  'dependentSchemas',
  'patternProperties',
  'propertyNames',
  'unevaluatedProperties',
  'contains',
];

/**
 * The schema as OpenAI's strict mode accepts it: every property required, the optional ones nullable,
 * `additionalProperties: false` on every object. Undefined when the schema cannot be made strict
 * (an open map, an unsupported keyword, a root that is not an object).
 */
export function toStrictSchema(schema: JsonSchema): JsonSchema | undefined {
  if (schema.type !== 'object') return undefined;
  try {
    return strictNode(schema) as JsonSchema;
  } catch (error) {
    if (error instanceof NotStrictable) return undefined;
    throw error;
  }
}

class NotStrictable extends RunnerError {}

function strictNode(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(strictNode);
  if (!node || typeof node !== 'object') return node;
  const source = node as JsonSchema;
  if (NOT_STRICTABLE.some((k) => k in source)) throw new NotStrictable();
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(source)) {
    if (key === 'properties' || key === '$defs' || key === 'definitions') {
      out[key] = Object.fromEntries(Object.entries(value as JsonSchema).map(([k, v]) => [k, strictNode(v)]));
    } else if (key === 'oneOf') {
      // Strict mode knows anyOf only; for validation of a model's output the two mean the same here.
      out.anyOf = strictNode(value);
    } else if (key === 'default') {
      // Strict mode refuses defaults; the runner applies them when it validates.
    } else if (key === 'items' || key === 'anyOf' || key === 'prefixItems') {
      out[key] = strictNode(value);
    } else if (key === 'additionalProperties') {
      if (value !== false) throw new NotStrictable();
    } else {
      out[key] = value;
    }
  }
  const isObject = source.type === 'object' || (Array.isArray(source.type) && source.type.includes('object'));
  if (!isObject) return out;
  if (!source.properties && source.additionalProperties !== false) throw new NotStrictable();
  const properties = (out.properties ?? {}) as JsonSchema;
  const required = new Set((source.required as string[] | undefined) ?? []);
  out.properties = Object.fromEntries(Object.entries(properties).map(([k, v]) => [k, required.has(k) ? v : nullable(v as JsonSchema)]));
  out.required = Object.keys(properties);
  out.additionalProperties = false;
  return out;
}

/** An optional property becomes "present but may be null"; the runner drops such nulls before validating. */
function nullable(schema: JsonSchema): JsonSchema {
  if (typeof schema.type === 'string') {
    const { type, enum: values, ...rest } = schema;
    return { ...rest, type: [type, 'null'], ...(Array.isArray(values) ? { enum: [...values, null] } : {}) };
  }
  if (Array.isArray(schema.type)) return schema.type.includes('null') ? schema : { ...schema, type: [...schema.type, 'null'] };
  return { anyOf: [schema, { type: 'null' }] };
}

/** OpenAI function parameters plus whether strict mode can be promised for them. */
export function openAIParameters(spec: ToolSpec): { parameters: JsonSchema; strict: boolean } {
  const loose = parametersOf(spec);
  const strict = toStrictSchema(loose);
  return strict ? { parameters: strict, strict: true } : { parameters: loose, strict: false };
}

/** Chat Completions (`?format=openai`): `{ type: 'function', function: { name, description, parameters, strict } }`. */
export function openAIChatTool(spec: ToolSpec) {
  return { type: 'function' as const, function: { name: spec.name, description: spec.description, ...openAIParameters(spec) } };
}

/** Responses API (`?format=openai-responses`): the function tool is flat. */
export function openAIResponsesTool(spec: ToolSpec) {
  return { type: 'function' as const, name: spec.name, description: spec.description, ...openAIParameters(spec) };
}

/** Anthropic Messages (`?format=anthropic`): `{ name, description, input_schema }`, input_schema an object schema. */
export function anthropicTool(spec: ToolSpec) {
  return { name: spec.name, description: spec.description, input_schema: { ...parametersOf(spec), type: 'object' as const } };
}

/** MCP `tools/list` entry (`?format=mcp` and the `/mcp` server): behaviour hints from the tool's policy. */
export function mcpTool(spec: ToolSpec) {
  return {
    name: spec.name,
    description: spec.description,
    inputSchema: { ...parametersOf(spec), type: 'object' as const },
    annotations: {
      readOnlyHint: spec.risk === 'read',
      destructiveHint: spec.risk === 'irreversible_write',
      idempotentHint: replaySafe(spec),
      openWorldHint: true,
    },
  };
}

/** Everything the runner knows about a tool's policy, for clients that are not a provider. */
export function neutralTool(spec: ToolSpec) {
  return {
    name: spec.name,
    description: spec.description,
    inputSchema: parametersOf(spec),
    outputSchema: z.toJSONSchema(spec.outputSchema, { target: 'draft-2020-12', unrepresentable: 'any' }),
    risk: spec.risk,
    maxAttempts: spec.maxAttempts,
    supportsIdempotency: spec.supportsIdempotency,
    reconcilable: Boolean(spec.reconcile),
    approval: typeof spec.approval === 'function' ? 'conditional' : spec.approval,
  };
}

export const TOOL_FORMATS = ['neutral', 'openai', 'openai-responses', 'anthropic', 'mcp'] as const;
export type ToolFormat = (typeof TOOL_FORMATS)[number];

export const SHAPES: Record<ToolFormat, (spec: ToolSpec) => unknown> = {
  neutral: neutralTool,
  openai: openAIChatTool,
  'openai-responses': openAIResponsesTool,
  anthropic: anthropicTool,
  mcp: mcpTool,
};

/**
 * Nulls a strict-mode model sent for optional properties, removed so the zod schema (which knows
 * `undefined`, not `null`, for an absent value) accepts them. Only where null is not itself valid.
 */
export function dropNullOptionals(schema: z.ZodType, value: unknown): unknown {
  const object = unwrapObject(schema);
  if (!object || !value || typeof value !== 'object' || Array.isArray(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    const field = object.shape[key] as z.ZodType | undefined;
    if (v === null && field && field.safeParse(undefined).success && !field.safeParse(null).success) continue;
    out[key] = field ? dropNullOptionals(field, v) : v;
  }
  return out;
}

function unwrapObject(schema: z.ZodType): z.ZodObject | undefined {
  let current: z.ZodType = schema;
  for (let i = 0; i < 5; i++) {
    if (current instanceof z.ZodObject) return current;
    if (current instanceof z.ZodOptional || current instanceof z.ZodNullable || current instanceof z.ZodDefault)
      current = current.unwrap() as z.ZodType;
    else return undefined;
  }
  return undefined;
}
