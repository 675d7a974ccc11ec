import { z } from 'zod';
import type { Principal, RunRecord } from './model';
import type { ToolSpec } from './tool-spec';

/**
 * What a Cedar policy sees of a call, and the schema that types it, generated from the registered tools so
 * that a policy naming a field the tool does not take is refused at load (docs/policies.md).
 *
 * Entities: `Principal::"<id>"` (roles, and the config principal's `attributes`), `Tool::"<name>"` (risk,
 * supportsIdempotency). Actions: `Action::"<tool>"` in the group `Action::"call"`, and
 * `Action::"<tool>:unattended"` in `Action::"call_unattended"`. Context: `input`, `run`, `now`.
 */

/** A type in Cedar's JSON schema format. */
export type CedarType =
  | { type: 'Long' | 'String' | 'Boolean' }
  | { type: 'Extension'; name: 'decimal' }
  | { type: 'Set'; element: CedarType }
  | { type: 'Record'; attributes: Record<string, CedarType & { required?: boolean }> };

/** A value in Cedar's JSON entity/context format. */
export type CedarValue =
  | string
  | number
  | boolean
  | CedarValue[]
  | { [key: string]: CedarValue }
  | { __extn: { fn: 'decimal'; arg: string } };

export const CALL_GROUP = 'call';
export const UNATTENDED_GROUP = 'call_unattended';
export const UNATTENDED_SUFFIX = ':unattended';

/** What policy attributes a config principal may carry: flat names, simple values. */
export type PrincipalAttribute = string | number | boolean | string[];

const RUN_TYPE: CedarType = {
  type: 'Record',
  attributes: { turns: { type: 'Long' }, toolCalls: { type: 'Long' }, spentCents: { type: 'Long' }, elapsedSeconds: { type: 'Long' } },
};
const NOW_TYPE: CedarType = { type: 'Record', attributes: { hour: { type: 'Long' }, weekday: { type: 'Long' } } };

type JsonSchema = { [key: string]: unknown };

/**
 * The Cedar type of a JSON Schema node, or undefined where Cedar has none (unions, maps, nulls): such a field
 * is left out of `context.input`, so a policy cannot name it and no value of it can break an evaluation.
 */
export function cedarTypeOf(schema: JsonSchema): CedarType | undefined {
  if ('const' in schema || 'enum' in schema) {
    const values = (schema.enum as unknown[] | undefined) ?? [schema.const];
    if (values.every((v) => typeof v === 'string')) return { type: 'String' };
    if (values.every((v) => typeof v === 'boolean')) return { type: 'Boolean' };
    if (values.every((v) => Number.isSafeInteger(v))) return { type: 'Long' };
    return undefined;
  }
  switch (schema.type) {
    case 'string':
      return { type: 'String' };
    case 'boolean':
      return { type: 'Boolean' };
    case 'integer':
      return { type: 'Long' };
    case 'number':
      return { type: 'Extension', name: 'decimal' };
    case 'array': {
      const element = schema.items && typeof schema.items === 'object' ? cedarTypeOf(schema.items as JsonSchema) : undefined;
      return element && { type: 'Set', element };
    }
    case 'object': {
      const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
      const required = new Set((schema.required as string[] | undefined) ?? []);
      const attributes: Record<string, CedarType & { required?: boolean }> = {};
      for (const [name, property] of Object.entries(properties)) {
        const type = cedarTypeOf(property);
        if (type) attributes[name] = required.has(name) ? type : { ...type, required: false };
      }
      return { type: 'Record', attributes };
    }
    default:
      return undefined;
  }
}

/** Per schema, once: a decision converts its input by it twice (the call and its unattended action). */
const inputTypes = new WeakMap<object, CedarType>();

/** A tool's frozen arguments as Cedar sees them (`context.input`): the parsed side, so defaults are present. */
export function inputTypeOf(tool: Pick<ToolSpec, 'inputSchema'>): CedarType {
  let type = inputTypes.get(tool.inputSchema);
  if (!type) {
    type = inputTypeFromSchema(tool);
    inputTypes.set(tool.inputSchema, type);
  }
  return type;
}

function inputTypeFromSchema(tool: Pick<ToolSpec, 'inputSchema'>): CedarType {
  const { $schema: _dialect, ...schema } = z.toJSONSchema(tool.inputSchema, {
    target: 'draft-2020-12',
    io: 'output',
    unrepresentable: 'any',
  }) as JsonSchema;
  return cedarTypeOf(schema) ?? { type: 'Record', attributes: {} };
}

/**
 * A JSON value as a Cedar value of `type`: integers stay Longs, other numbers become decimals (four places,
 * Cedar's precision), nulls and values that do not fit their type are left out (absent optionals).
 */
export function cedarValueOf(type: CedarType, value: unknown): CedarValue | undefined {
  switch (type.type) {
    case 'Long':
      return Number.isSafeInteger(value) ? (value as number) : undefined;
    case 'String':
      return typeof value === 'string' ? value : undefined;
    case 'Boolean':
      return typeof value === 'boolean' ? value : undefined;
    case 'Extension':
      return typeof value === 'number' && Number.isFinite(value) && Math.abs(value) < 9e14 ? decimal(value) : undefined;
    case 'Set':
      if (!Array.isArray(value)) return undefined;
      return value.map((item) => cedarValueOf(type.element, item)).filter((item): item is CedarValue => item !== undefined);
    case 'Record': {
      if (!value || typeof value !== 'object' || Array.isArray(value)) return undefined;
      const out: Record<string, CedarValue> = {};
      for (const [name, attribute] of Object.entries(type.attributes)) {
        const converted = cedarValueOf(attribute, (value as Record<string, unknown>)[name]);
        if (converted !== undefined) out[name] = converted;
      }
      return out;
    }
  }
}

function decimal(value: number): CedarValue {
  const fixed = value.toFixed(4).replace(/0{1,3}$/, '');
  return { __extn: { fn: 'decimal', arg: fixed.endsWith('.') ? `${fixed}0` : fixed } };
}

/** The type of each principal attribute the configuration uses, from its values (all optional: not every principal has each). */
export function principalAttributeTypes(
  principals: readonly { attributes?: Record<string, PrincipalAttribute> }[],
): Record<string, CedarType> {
  const types: Record<string, CedarType> = {};
  for (const principal of principals)
    for (const [name, value] of Object.entries(principal.attributes ?? {})) types[name] ??= attributeType(value);
  return types;
}

function attributeType(value: PrincipalAttribute): CedarType {
  if (Array.isArray(value)) return { type: 'Set', element: { type: 'String' } };
  if (typeof value === 'boolean') return { type: 'Boolean' };
  if (typeof value === 'number') return Number.isSafeInteger(value) ? { type: 'Long' } : { type: 'Extension', name: 'decimal' };
  return { type: 'String' };
}

/** The policy schema (Cedar JSON schema format, empty namespace) for these tools and principal attributes. */
export function policySchema(
  tools: readonly Pick<ToolSpec, 'name' | 'inputSchema'>[],
  attributes: Record<string, CedarType>,
): Record<string, unknown> {
  const principalAttributes: Record<string, CedarType & { required?: boolean }> = { roles: { type: 'Set', element: { type: 'String' } } };
  for (const [name, type] of Object.entries(attributes)) if (name !== 'roles') principalAttributes[name] = { ...type, required: false };
  const actions: Record<string, unknown> = { [CALL_GROUP]: {}, [UNATTENDED_GROUP]: {} };
  for (const tool of [...tools].sort((a, b) => a.name.localeCompare(b.name))) {
    const context = { type: 'Record', attributes: { input: inputTypeOf(tool), run: RUN_TYPE, now: NOW_TYPE } };
    const appliesTo = { principalTypes: ['Principal'], resourceTypes: ['Tool'], context };
    actions[tool.name] = { memberOf: [{ id: CALL_GROUP }], appliesTo };
    actions[`${tool.name}${UNATTENDED_SUFFIX}`] = { memberOf: [{ id: UNATTENDED_GROUP }], appliesTo };
  }
  return {
    '': {
      entityTypes: {
        Principal: { shape: { type: 'Record', attributes: principalAttributes } },
        Tool: { shape: { type: 'Record', attributes: { risk: { type: 'String' }, supportsIdempotency: { type: 'Boolean' } } } },
      },
      actions,
    },
  };
}

/** What the run had used before this call, as `context.run`. */
export interface RunFacts {
  turns: number;
  toolCalls: number;
  spentCents: number;
  elapsedSeconds: number;
}

export function runFactsOf(run: Pick<RunRecord, 'usage' | 'createdAt'> | undefined, now: number): RunFacts {
  if (!run) return { turns: 0, toolCalls: 0, spentCents: 0, elapsedSeconds: 0 };
  return {
    turns: run.usage.turns,
    toolCalls: run.usage.toolCalls,
    spentCents: run.usage.spendCents,
    elapsedSeconds: Math.max(0, Math.floor((now - Date.parse(run.createdAt)) / 1000)),
  };
}

/** `context.now`: the UTC hour (0–23) and weekday (0 Sunday … 6 Saturday). */
export function nowFacts(now: number): { hour: number; weekday: number } {
  const at = new Date(now);
  return { hour: at.getUTCHours(), weekday: at.getUTCDay() };
}

/** One question to the policies: may this principal take this action (the tool, or the tool unattended) on this call? */
export interface PolicyRequest {
  principal: Principal & { attributes?: Record<string, PrincipalAttribute> };
  tool: Pick<ToolSpec, 'name' | 'inputSchema' | 'risk' | 'supportsIdempotency'>;
  action: 'call' | 'unattended';
  input: unknown;
  run: RunFacts;
  now: number;
}

/** The request in Cedar's JSON form (entities included), for an engine to evaluate. */
export function cedarRequestOf(request: PolicyRequest, attributes: Record<string, CedarType>) {
  const { principal, tool } = request;
  const principalAttrs: Record<string, CedarValue> = { roles: [...principal.roles] };
  for (const [name, type] of Object.entries(attributes)) {
    const value = name === 'roles' ? undefined : cedarValueOf(type, principal.attributes?.[name]);
    if (value !== undefined) principalAttrs[name] = value;
  }
  const action = request.action === 'call' ? tool.name : `${tool.name}${UNATTENDED_SUFFIX}`;
  const group = request.action === 'call' ? CALL_GROUP : UNATTENDED_GROUP;
  return {
    principal: { type: 'Principal', id: principal.id },
    action: { type: 'Action', id: action },
    resource: { type: 'Tool', id: tool.name },
    context: {
      input: cedarValueOf(inputTypeOf(tool), request.input) ?? {},
      run: { ...request.run },
      now: nowFacts(request.now),
    } as Record<string, CedarValue>,
    entities: [
      { uid: { type: 'Principal', id: principal.id }, attrs: principalAttrs, parents: [] },
      { uid: { type: 'Tool', id: tool.name }, attrs: { risk: tool.risk, supportsIdempotency: tool.supportsIdempotency }, parents: [] },
      { uid: { type: 'Action', id: action }, attrs: {}, parents: [{ type: 'Action', id: group }] },
    ],
  };
}

/** What the policies answered: allowed or not, the determining policy ids, and what log-only policies would have made of it. */
export interface PolicyAnswer {
  allowed: boolean;
  /** The `@id`s of the policies that decided: the permits that allowed, or the forbids that denied (none: default deny). */
  determining: string[];
  /** Set when `@mode("log_only")` policies exist and would have decided otherwise or took part. */
  shadow?: { allowed: boolean; determining: string[] };
}

/** What of the configuration the policies come from. */
export interface PolicyConfig {
  policies?: string;
  policiesFile?: string;
  principals: readonly { attributes?: Record<string, PrincipalAttribute> }[];
}

/** The configured policies, loaded once: a synchronous decision per request (the engine is in process). */
export interface PolicyEvaluator {
  evaluate(request: PolicyRequest): PolicyAnswer;
  /** How many policies were loaded (enforced and log-only), for the log line at load. */
  readonly size: number;
}
