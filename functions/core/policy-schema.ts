import { z } from 'zod';
import type { Principal, RunRecord } from './model';
import { modelSpendMicrosOf, spentMicrosOf, toolSpendMicrosOf, wholeCentsOfMicros } from './spend';
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
  attributes: {
    turns: { type: 'Long' },
    toolCalls: { type: 'Long' },
    spentCents: { type: 'Long' },
    modelSpentCents: { type: 'Long' },
    toolSpentCents: { type: 'Long' },
    elapsedSeconds: { type: 'Long' },
  },
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

/** A value the policy schema cannot represent exactly: where it is (a dotted path) and why, never the value itself. */
export interface Unrepresentable {
  path: string;
  reason: string;
}

export type CedarConversion = { ok: true; value: CedarValue | undefined } | ({ ok: false } & Unrepresentable);

// Cedar's decimal is a 64-bit integer of ten-thousandths; Long is 64-bit, but a JSON number is exact only up to 2^53 - 1.
const DECIMAL_PLACES = 4;
const DECIMAL_MIN = -(2n ** 63n);
const DECIMAL_MAX = 2n ** 63n - 1n;
const NOT_A_DECIMAL =
  'the policies cannot compare this number exactly (a decimal has at most 4 places and lies within ±922337203685477.5807)';
const NOT_A_LONG = 'the policies cannot compare this number exactly (an integer lies within ±9007199254740991)';
const LONE_SURROGATE = 'the policies cannot read this string (it holds a lone UTF-16 surrogate)';
const LONE_SURROGATE_PATTERN = /\p{Surrogate}/u;

class Misfit {
  constructor(
    readonly path: (string | number)[],
    readonly reason: string,
  ) {}
}

/**
 * A JSON value as the Cedar value of `type`, exactly or not at all: integers as Longs (safe integers only),
 * other numbers as decimals (at most four places, within decimal's range), well-formed strings. An absent
 * optional (undefined) stays absent; anything else that does not fit is refused with its path, because a value
 * left out or rounded would make a policy that reads it err (and be skipped) or compare something else.
 */
export function cedarValueOf(type: CedarType, value: unknown): CedarConversion {
  const converted = convert(type, value, []);
  if (converted instanceof Misfit) return { ok: false, path: converted.path.map(String).join('.'), reason: converted.reason };
  return { ok: true, value: converted };
}

function convert(type: CedarType, value: unknown, path: (string | number)[]): CedarValue | undefined | Misfit {
  if (value === undefined) return undefined;
  switch (type.type) {
    case 'Long':
      return Number.isSafeInteger(value) ? (value as number) : new Misfit(path, typeof value === 'number' ? NOT_A_LONG : 'not an integer');
    case 'String':
      if (typeof value !== 'string') return new Misfit(path, 'not a string');
      return LONE_SURROGATE_PATTERN.test(value) ? new Misfit(path, LONE_SURROGATE) : value;
    case 'Boolean':
      return typeof value === 'boolean' ? value : new Misfit(path, 'not a boolean');
    case 'Extension':
      if (typeof value !== 'number') return new Misfit(path, 'not a number');
      return decimal(value) ?? new Misfit(path, NOT_A_DECIMAL);
    case 'Set': {
      if (!Array.isArray(value)) return new Misfit(path, 'not a list');
      const out: CedarValue[] = [];
      for (const [index, item] of value.entries()) {
        const converted = convert(type.element, item, [...path, index]);
        if (converted instanceof Misfit) return converted;
        if (converted === undefined) return new Misfit([...path, index], 'a missing item');
        out.push(converted);
      }
      return out;
    }
    case 'Record': {
      if (!value || typeof value !== 'object' || Array.isArray(value)) return new Misfit(path, 'not an object');
      const out: Record<string, CedarValue> = {};
      for (const [name, attribute] of Object.entries(type.attributes)) {
        const converted = convert(attribute, (value as Record<string, unknown>)[name], [...path, name]);
        if (converted instanceof Misfit) return converted;
        if (converted !== undefined) out[name] = converted;
      }
      return out;
    }
  }
}

/** The number as Cedar's decimal literal, from its shortest round-trip form, or undefined where that is not exact. */
function decimal(value: number): CedarValue | undefined {
  if (!Number.isFinite(value)) return undefined;
  // Exponent forms are below 1e-6 (more than four places) or at least 1e21 (beyond the range).
  const text = String(value);
  const match = /^(-?)(\d+)(?:\.(\d+))?$/.exec(text);
  if (!match) return undefined;
  const [, sign, whole, fraction = ''] = match;
  if (fraction.length > DECIMAL_PLACES) return undefined;
  const scaled = BigInt(`${sign}${whole}${fraction.padEnd(DECIMAL_PLACES, '0')}`);
  if (scaled < DECIMAL_MIN || scaled > DECIMAL_MAX) return undefined;
  return { __extn: { fn: 'decimal', arg: `${sign}${whole}.${fraction || '0'}` } };
}

/** The type of each principal attribute the configuration uses, from its values (all optional: not every principal has each). */
export function principalAttributeTypes(
  principals: readonly { attributes?: Record<string, PrincipalAttribute> }[],
): Record<string, CedarType> {
  const types: Record<string, CedarType> = {};
  for (const principal of principals)
    for (const [name, value] of Object.entries(principal.attributes ?? {})) {
      const type = attributeType(value);
      // Integers and decimals mix as decimals: one principal's 2.5 makes the attribute a decimal for all.
      if (!types[name] || (types[name].type === 'Long' && type.type === 'Extension')) types[name] = type;
    }
  return types;
}

function attributeType(value: PrincipalAttribute): CedarType {
  if (Array.isArray(value)) return { type: 'Set', element: { type: 'String' } };
  if (typeof value === 'boolean') return { type: 'Boolean' };
  if (typeof value === 'number')
    return Number.isInteger(value) && Number.isSafeInteger(value) ? { type: 'Long' } : { type: 'Extension', name: 'decimal' };
  return { type: 'String' };
}

const KIND_NAMES: Record<CedarType['type'], string> = {
  Long: 'a number',
  Extension: 'a number',
  String: 'a string',
  Boolean: 'a boolean',
  Set: 'a list of strings',
  Record: 'an object',
};

/**
 * Each configured principal attribute the policies could not see exactly as written (checked when the policies
 * load, so a decision never meets one): a value of another kind than other principals give it, a number beyond
 * what its type holds, a string with a lone surrogate.
 */
export function principalAttributeProblems(
  principals: readonly { id?: string; attributes?: Record<string, PrincipalAttribute> }[],
  types: Record<string, CedarType>,
): string[] {
  const problems: string[] = [];
  for (const [index, principal] of principals.entries())
    for (const [name, value] of Object.entries(principal.attributes ?? {})) {
      if (name === 'roles' || !types[name]) continue;
      const who = `principal "${principal.id ?? `#${index + 1}`}": attribute ${name}`;
      const own = attributeType(value);
      if (KIND_NAMES[own.type] !== KIND_NAMES[types[name].type]) {
        problems.push(`${who}: ${KIND_NAMES[own.type]} where other principals have ${KIND_NAMES[types[name].type]}`);
        continue;
      }
      const converted = cedarValueOf(types[name], value);
      if (!converted.ok) problems.push(`${who}${converted.path ? `.${converted.path}` : ''}: ${converted.reason}`);
    }
  return problems;
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
  modelSpentCents: number;
  toolSpentCents: number;
  elapsedSeconds: number;
}

export function runFactsOf(run: Pick<RunRecord, 'usage' | 'createdAt'> | undefined, now: number): RunFacts {
  if (!run) return { turns: 0, toolCalls: 0, spentCents: 0, modelSpentCents: 0, toolSpentCents: 0, elapsedSeconds: 0 };
  return {
    turns: run.usage.turns,
    toolCalls: run.usage.toolCalls,
    // Cedar's Long is whole: spend is counted up to the next cent.
    spentCents: wholeCentsOfMicros(spentMicrosOf(run.usage)),
    modelSpentCents: wholeCentsOfMicros(modelSpendMicrosOf(run.usage)),
    toolSpentCents: wholeCentsOfMicros(toolSpendMicrosOf(run.usage)),
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
export interface CedarRequest {
  principal: { type: 'Principal'; id: string };
  action: { type: 'Action'; id: string };
  resource: { type: 'Tool'; id: string };
  context: Record<string, CedarValue>;
  entities: { uid: { type: string; id: string }; attrs: Record<string, CedarValue>; parents: { type: string; id: string }[] }[];
}

/** Where a request holds a value the schema cannot represent: the call's input, or its principal (id, roles, attributes). */
export type RequestMisfit = Unrepresentable & { in: 'input' | 'principal' };

/**
 * The request in Cedar's JSON form, or the first value in it the schema cannot represent exactly (the
 * decision then denies: evaluating without it would skip every policy that reads it).
 */
export function cedarRequestOf(
  request: PolicyRequest,
  attributes: Record<string, CedarType>,
): { ok: true; request: CedarRequest } | { ok: false; misfit: RequestMisfit } {
  const { principal, tool } = request;
  const principalMisfit = (path: string, reason: string) => ({ ok: false as const, misfit: { in: 'principal' as const, path, reason } });
  if (LONE_SURROGATE_PATTERN.test(principal.id)) return principalMisfit('id', LONE_SURROGATE);
  const roles = cedarValueOf({ type: 'Set', element: { type: 'String' } }, [...principal.roles]);
  if (!roles.ok) return principalMisfit(`roles.${roles.path}`, roles.reason);
  const principalAttrs: Record<string, CedarValue> = { roles: roles.value as CedarValue };
  for (const [name, type] of Object.entries(attributes)) {
    if (name === 'roles') continue;
    const converted = cedarValueOf(type, principal.attributes?.[name]);
    if (!converted.ok) return principalMisfit(converted.path ? `${name}.${converted.path}` : name, converted.reason);
    if (converted.value !== undefined) principalAttrs[name] = converted.value;
  }
  const input = cedarValueOf(inputTypeOf(tool), request.input);
  if (!input.ok) return { ok: false, misfit: { in: 'input', path: input.path, reason: input.reason } };
  const action = request.action === 'call' ? tool.name : `${tool.name}${UNATTENDED_SUFFIX}`;
  const group = request.action === 'call' ? CALL_GROUP : UNATTENDED_GROUP;
  return {
    ok: true,
    request: {
      principal: { type: 'Principal', id: principal.id },
      action: { type: 'Action', id: action },
      resource: { type: 'Tool', id: tool.name },
      context: {
        input: input.value ?? {},
        run: { ...request.run },
        now: nowFacts(request.now),
      } as Record<string, CedarValue>,
      entities: [
        { uid: { type: 'Principal', id: principal.id }, attrs: principalAttrs, parents: [] },
        { uid: { type: 'Tool', id: tool.name }, attrs: { risk: tool.risk, supportsIdempotency: tool.supportsIdempotency }, parents: [] },
        { uid: { type: 'Action', id: action }, attrs: {}, parents: [{ type: 'Action', id: group }] },
      ],
    },
  };
}

/** An enforced policy that could apply but failed on this request (Cedar would skip it), or the engine failing as a whole. */
export interface PolicyError {
  /** The policy's `@id`; absent where the engine could not evaluate the request at all. */
  policyId?: string;
  reason: string;
}

/** What the policies answered: allowed or not, the determining policy ids, and what log-only policies would have made of it. */
export interface PolicyAnswer {
  allowed: boolean;
  /**
   * The `@id`s of the policies that decided: the permits that allowed, or the forbids that denied (none: default
   * deny), or, where no forbid applied, the enforced policies that could not be evaluated.
   */
  determining: string[];
  /** Set when the decision could not be evaluated: it is then a deny (fail closed), never a policy skipped. */
  errors?: PolicyError[];
  /** Set when the request holds a value the schema cannot represent exactly: a deny, never a value left out. */
  unrepresentable?: RequestMisfit;
  /** Set when `@mode("log_only")` policies exist and would have decided otherwise or took part (their errors included). */
  shadow?: { allowed: boolean; determining: string[]; errors?: PolicyError[] };
}

/** What of the configuration the policies come from. */
export interface PolicyConfig {
  policies?: string;
  policiesFile?: string;
  principals: readonly { id?: string; attributes?: Record<string, PrincipalAttribute> }[];
}

/** The configured policies, loaded once: a synchronous decision per request (the engine is in process). */
export interface PolicyEvaluator {
  evaluate(request: PolicyRequest): PolicyAnswer;
  /** How many policies were loaded (enforced and log-only), for the log line at load. */
  readonly size: number;
}
