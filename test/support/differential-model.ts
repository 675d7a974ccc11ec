import fc from 'fast-check';
import { numberProblem } from '../../functions/core/json-bounds';

/**
 * The reference side of the differential test: a small grammar of Cedar policies (permits and forbids over
 * input fields, principal attributes and run facts), evaluated here in plain JavaScript on the exact values the
 * tool would receive, and the decision every door must give for a call under it.
 */

export type Op = '<' | '<=' | '>' | '>=' | '==' | '!=';
export type Atom =
  | { k: 'long'; field: string; optional: boolean; op: Op; lit: number; times?: number }
  | {
      k: 'dec';
      field: string;
      optional: boolean;
      method: 'lessThan' | 'lessThanOrEqual' | 'greaterThan' | 'greaterThanOrEqual';
      lit: string;
    }
  | { k: 'str'; field: string; optional: boolean; lit: string; like: boolean }
  | { k: 'tier'; lit: string }
  | { k: 'level'; op: Op; lit: number }
  | { k: 'group'; lit: string }
  | { k: 'role'; role: string }
  | { k: 'hour'; op: Op; lit: number }
  | { k: 'spent'; op: Op; lit: number };

export type Scope =
  | { k: 'any' }
  | { k: 'call' }
  | { k: 'unattendedGroup' }
  | { k: 'tool'; tool: string }
  | { k: 'toolUnattended'; tool: string };

export interface Policy {
  id: string;
  effect: 'permit' | 'forbid';
  logOnly: boolean;
  scope: Scope;
  atoms: Atom[];
  join: '&&' | '||';
  negate: boolean;
}

/** The tools' fields as policies may read them (mirrors differentialTools). */
export const FIELDS: Record<string, { name: string; type: 'long' | 'dec' | 'str' | 'enum'; optional: boolean }[]> = {
  pay: [
    { name: 'amount', type: 'dec', optional: false },
    { name: 'count', type: 'long', optional: false },
    { name: 'currency', type: 'enum', optional: false },
    { name: 'memo', type: 'str', optional: true },
  ],
  send: [
    { name: 'to', type: 'str', optional: false },
    { name: 'priority', type: 'long', optional: true },
    { name: 'weight', type: 'dec', optional: true },
  ],
  lookup: [
    { name: 'q', type: 'str', optional: false },
    { name: 'limit', type: 'long', optional: true },
  ],
  refund: [
    { name: 'amount', type: 'dec', optional: false },
    { name: 'reason', type: 'str', optional: true },
  ],
};
export const TOOL_NAMES = Object.keys(FIELDS);

const OPS: Op[] = ['<', '<=', '>', '>=', '==', '!='];
const DEC_LITS = ['0.0', '1000.0', '-1000.0', '0.5', '500.0', '900000000000000.0', '-0.0001'];
const LONG_LITS = [0, 5, 1000, 1000000, 900000000000000, -1];
const STR_LITS = ['suspended', 'EUR', 'USD', 'a', ''];

function atomArb(tool: string | undefined): fc.Arbitrary<Atom> {
  const common: fc.Arbitrary<Atom>[] = [
    fc.record({ k: fc.constant('tier' as const), lit: fc.constantFrom('suspended', 'gold', 'basic') }),
    fc.record({ k: fc.constant('level' as const), op: fc.constantFrom(...OPS), lit: fc.integer({ min: 0, max: 5 }) }),
    fc.record({ k: fc.constant('group' as const), lit: fc.constantFrom('ops', 'eu') }),
    fc.record({ k: fc.constant('role' as const), role: fc.constantFrom('admin', 'agent', 'approver') }),
    fc.record({ k: fc.constant('hour' as const), op: fc.constantFrom(...OPS), lit: fc.integer({ min: 0, max: 23 }) }),
    fc.record({ k: fc.constant('spent' as const), op: fc.constantFrom('<', '>=' as Op), lit: fc.constantFrom(0, 100) }),
  ];
  if (!tool) return fc.oneof(...common);
  const input = FIELDS[tool].map((f): fc.Arbitrary<Atom> => {
    if (f.type === 'long')
      return fc.record({
        k: fc.constant('long' as const),
        field: fc.constant(f.name),
        optional: fc.constant(f.optional),
        op: fc.constantFrom(...OPS),
        lit: fc.constantFrom(...LONG_LITS),
        times: fc.option(fc.constantFrom(2, 1000000), { nil: undefined }),
      });
    if (f.type === 'dec')
      return fc.record({
        k: fc.constant('dec' as const),
        field: fc.constant(f.name),
        optional: fc.constant(f.optional),
        method: fc.constantFrom('lessThan' as const, 'lessThanOrEqual' as const, 'greaterThan' as const, 'greaterThanOrEqual' as const),
        lit: fc.constantFrom(...DEC_LITS),
      });
    return fc.record({
      k: fc.constant('str' as const),
      field: fc.constant(f.name),
      optional: fc.constant(f.optional),
      lit: fc.constantFrom(...STR_LITS),
      like: f.type === 'enum' ? fc.constant(false) : fc.boolean(),
    });
  });
  // Input fields twice as likely as the rest: that is where the numbers are.
  return fc.oneof(...input, ...input, ...common);
}

const scopeArb: fc.Arbitrary<Scope> = fc.oneof(
  { weight: 1, arbitrary: fc.constant({ k: 'any' } as Scope) },
  { weight: 2, arbitrary: fc.constant({ k: 'call' } as Scope) },
  { weight: 1, arbitrary: fc.constant({ k: 'unattendedGroup' } as Scope) },
  { weight: 4, arbitrary: fc.constantFrom(...TOOL_NAMES).map((tool): Scope => ({ k: 'tool', tool })) },
  { weight: 2, arbitrary: fc.constantFrom(...TOOL_NAMES).map((tool): Scope => ({ k: 'toolUnattended', tool })) },
);

export const policyArb: fc.Arbitrary<Omit<Policy, 'id'>> = fc
  .record({
    effect: fc.constantFrom('permit' as const, 'forbid' as const),
    scope: scopeArb,
    join: fc.constantFrom('&&' as const, '||' as const),
    negate: fc.boolean(),
    logRoll: fc.integer({ min: 0, max: 9 }),
  })
  // A tenth are log-only: they never decide, and their forbids are not the ones that must hold.
  .chain(({ scope, logRoll, ...rest }) => {
    const tool = scope.k === 'tool' || scope.k === 'toolUnattended' ? scope.tool : undefined;
    return fc.array(atomArb(tool), { minLength: 0, maxLength: 2 }).map((atoms) => ({ ...rest, logOnly: logRoll === 0, scope, atoms }));
  });

const plain = { logOnly: false, join: '&&' as const, negate: false };

/**
 * Forbids of the shapes that were skipped: on a principal attribute (a token dropped it), on a large or
 * long-decimal amount (left out or rounded), on a product that overflows (an evaluation error).
 */
const knownForbids: Omit<Policy, 'id'>[] = [
  { ...plain, effect: 'forbid', scope: { k: 'call' }, atoms: [{ k: 'tier', lit: 'suspended' }] },
  {
    ...plain,
    effect: 'forbid',
    scope: { k: 'tool', tool: 'pay' },
    atoms: [{ k: 'dec', field: 'amount', optional: false, method: 'greaterThan', lit: '1000.0' }],
  },
  {
    ...plain,
    effect: 'forbid',
    scope: { k: 'tool', tool: 'pay' },
    atoms: [{ k: 'dec', field: 'amount', optional: false, method: 'lessThan', lit: '0.0' }],
  },
  {
    ...plain,
    effect: 'forbid',
    scope: { k: 'tool', tool: 'refund' },
    atoms: [{ k: 'dec', field: 'amount', optional: false, method: 'greaterThan', lit: '1000.0' }],
  },
  {
    ...plain,
    effect: 'forbid',
    scope: { k: 'tool', tool: 'send' },
    atoms: [{ k: 'dec', field: 'weight', optional: true, method: 'greaterThan', lit: '1000.0' }],
  },
  {
    ...plain,
    effect: 'forbid',
    scope: { k: 'tool', tool: 'pay' },
    atoms: [{ k: 'long', field: 'count', optional: false, op: '>', lit: 5, times: 1000000 }],
  },
  {
    ...plain,
    effect: 'forbid',
    scope: { k: 'tool', tool: 'lookup' },
    atoms: [{ k: 'str', field: 'q', optional: false, lit: 'suspended', like: true }],
  },
];

/** A policy set: often the broad permits, sometimes a forbid of a known shape, then a few generated policies. */
export const policySetArb: fc.Arbitrary<Policy[]> = fc
  .record({
    callPermit: fc.integer({ min: 0, max: 9 }),
    unattendedPermit: fc.boolean(),
    known: fc.option(fc.constantFrom(...knownForbids), { nil: undefined, freq: 2 }),
    generated: fc.array(policyArb, { minLength: 0, maxLength: 4 }),
  })
  .map(({ callPermit, unattendedPermit, known, generated }) => {
    const base: Omit<Policy, 'id'>[] = [];
    if (callPermit < 8) base.push({ ...plain, atoms: [], effect: 'permit', scope: { k: 'call' } });
    if (unattendedPermit) base.push({ ...plain, atoms: [], effect: 'permit', scope: { k: 'unattendedGroup' } });
    return [...base, ...(known ? [known] : []), ...generated].map((p, i) => ({ ...p, id: `p${i}` }));
  });

const cedarOp = (op: Op) => op;

function atomText(a: Atom): string {
  const guard = (optional: boolean, field: string, body: string) => (optional ? `(context.input has ${field} && ${body})` : body);
  switch (a.k) {
    case 'long':
      return guard(a.optional, a.field, `context.input.${a.field}${a.times ? ` * ${a.times}` : ''} ${cedarOp(a.op)} ${a.lit}`);
    case 'dec':
      return guard(a.optional, a.field, `context.input.${a.field}.${a.method}(decimal("${a.lit}"))`);
    case 'str':
      return guard(a.optional, a.field, a.like ? `context.input.${a.field} like "*${a.lit}*"` : `context.input.${a.field} == "${a.lit}"`);
    case 'tier':
      return `(principal has tier && principal.tier == "${a.lit}")`;
    case 'level':
      return `(principal has level && principal.level ${a.op} ${a.lit})`;
    case 'group':
      return `(principal has groups && principal.groups.contains("${a.lit}"))`;
    case 'role':
      return `principal.roles.contains("${a.role}")`;
    case 'hour':
      return `context.now.hour ${a.op} ${a.lit}`;
    case 'spent':
      return `context.run.spentCents ${a.op} ${a.lit}`;
  }
}

function scopeText(s: Scope): string {
  switch (s.k) {
    case 'any':
      return 'action';
    case 'call':
      return 'action in Action::"call"';
    case 'unattendedGroup':
      return 'action in Action::"call_unattended"';
    case 'tool':
      return `action == Action::"${s.tool}"`;
    case 'toolUnattended':
      return `action == Action::"${s.tool}:unattended"`;
  }
}

export function policyText(policies: Policy[]): string {
  return policies
    .map((p) => {
      const condition = p.atoms.length ? p.atoms.map(atomText).join(` ${p.join} `) : 'true';
      const when = p.atoms.length ? ` when { ${p.negate ? `!(${condition})` : condition} }` : '';
      return `@id("${p.id}")${p.logOnly ? ' @mode("log_only")' : ''}\n${p.effect}(principal, ${scopeText(p.scope)}, resource)${when};`;
    })
    .join('\n\n');
}

export interface RefPrincipal {
  roles: string[];
  tools: '*' | string[];
  attributes: Record<string, string | number | string[]>;
}

class ReferenceEvaluationError extends Error {}

const compare = (a: number | bigint, op: Op, b: number | bigint): boolean => {
  switch (op) {
    case '<':
      return a < b;
    case '<=':
      return a <= b;
    case '>':
      return a > b;
    case '>=':
      return a >= b;
    case '==':
      return a === b;
    case '!=':
      return a !== b;
  }
};

const I64_MIN = -(2n ** 63n);
const I64_MAX = 2n ** 63n - 1n;

/** Cedar's `like` with only `*` wildcards. */
function like(value: string, pattern: string): boolean {
  const parts = pattern.split('*');
  const regex = new RegExp(`^${parts.map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`, 's');
  return regex.test(value);
}

function evalAtom(a: Atom, input: Record<string, unknown>, principal: RefPrincipal, hour: number): boolean {
  switch (a.k) {
    case 'long': {
      const v = input[a.field];
      if (v === undefined) {
        if (a.optional) return false;
        throw new ReferenceEvaluationError(`missing ${a.field}`);
      }
      let x = BigInt(v as number);
      if (a.times) {
        x *= BigInt(a.times);
        if (x < I64_MIN || x > I64_MAX) throw new ReferenceEvaluationError('overflow');
      }
      return compare(x, a.op, BigInt(a.lit));
    }
    case 'dec': {
      const v = input[a.field];
      if (v === undefined) {
        if (a.optional) return false;
        throw new ReferenceEvaluationError(`missing ${a.field}`);
      }
      const lit = Number(a.lit);
      const x = v as number;
      return a.method === 'lessThan'
        ? x < lit
        : a.method === 'lessThanOrEqual'
          ? x <= lit
          : a.method === 'greaterThan'
            ? x > lit
            : x >= lit;
    }
    case 'str': {
      const v = input[a.field];
      if (v === undefined) {
        if (a.optional) return false;
        throw new ReferenceEvaluationError(`missing ${a.field}`);
      }
      return a.like ? like(v as string, `*${a.lit}*`) : v === a.lit;
    }
    case 'tier':
      return principal.attributes.tier === a.lit;
    case 'level':
      return typeof principal.attributes.level === 'number' && compare(principal.attributes.level, a.op, a.lit);
    case 'group':
      return Array.isArray(principal.attributes.groups) && principal.attributes.groups.includes(a.lit);
    case 'role':
      return principal.roles.includes(a.role);
    case 'hour':
      return compare(hour, a.op, a.lit);
    case 'spent':
      return compare(0, a.op, a.lit);
  }
}

function scopeMatches(s: Scope, tool: string, unattended: boolean): boolean {
  switch (s.k) {
    case 'any':
      return true;
    case 'call':
      return !unattended;
    case 'unattendedGroup':
      return unattended;
    case 'tool':
      return !unattended && s.tool === tool;
    case 'toolUnattended':
      return unattended && s.tool === tool;
  }
}

/** One policy on one request: applies, does not, or errors (Cedar's `&&`/`||` short-circuit, as here). */
function evalPolicy(p: Policy, input: Record<string, unknown>, principal: RefPrincipal, hour: number): boolean | 'error' {
  try {
    let result = p.join === '&&';
    for (const atom of p.atoms) {
      const value = evalAtom(atom, input, principal, hour);
      if (p.join === '&&' && !value) {
        result = false;
        break;
      }
      if (p.join === '||' && value) {
        result = true;
        break;
      }
    }
    if (p.atoms.length === 0) result = true;
    return p.negate && p.atoms.length ? !result : result;
  } catch (error) {
    if (error instanceof ReferenceEvaluationError) return 'error';
    throw error;
  }
}

/** The enforced policies' answer for one action: allowed, forbidden by a forbid, no permit, or an evaluation error. */
function answer(
  policies: Policy[],
  tool: string,
  unattended: boolean,
  input: Record<string, unknown>,
  principal: RefPrincipal,
  hour: number,
) {
  let permitted = false;
  let forbidden = false;
  let errored = false;
  for (const p of policies) {
    if (p.logOnly || !scopeMatches(p.scope, tool, unattended)) continue;
    const applies = evalPolicy(p, input, principal, hour);
    if (applies === 'error') errored = true;
    else if (applies && p.effect === 'forbid') forbidden = true;
    else if (applies) permitted = true;
  }
  return { errored, forbidden, allowed: permitted && !forbidden && !errored };
}

/** Does an enforced forbid apply to the call action on the exact value (the property "never skipped")? */
export function forbidApplies(policies: Policy[], tool: string, input: Record<string, unknown>, principal: RefPrincipal, hour: number) {
  return policies.some(
    (p) => !p.logOnly && p.effect === 'forbid' && scopeMatches(p.scope, tool, false) && evalPolicy(p, input, principal, hour) === true,
  );
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Can Cedar hold this field's value exactly: a Long, a decimal of at most four places within i64/10^4, a string without lone surrogates? */
export function representable(type: 'long' | 'dec' | 'str' | 'enum', value: unknown): boolean {
  if (value === undefined) return true;
  if (type === 'long') return Number.isSafeInteger(value);
  if (type === 'dec') {
    if (typeof value !== 'number' || !Number.isFinite(value)) return false;
    const text = String(value);
    if (/e/i.test(text)) return false;
    const [whole, fraction = ''] = text.split('.');
    if (fraction.length > 4) return false;
    // Cedar's decimal is a signed 64-bit count of ten-thousandths.
    const units = BigInt(`${whole}${fraction.padEnd(4, '0')}`);
    return units >= I64_MIN && units <= I64_MAX;
  }
  return typeof value === 'string' && !LONE_SURROGATE.test(value);
}

/** Numbers the API refuses as a request wherever they are (json-bounds): nothing is created. */
export function refusedAsRequest(value: unknown): boolean {
  if (typeof value === 'number') return numberProblem(value) !== undefined;
  if (value && typeof value === 'object') return Object.values(value).some(refusedAsRequest);
  return false;
}

export type Expected = { kind: 'allow' } | { kind: 'approval' } | { kind: 'deny'; code: string } | { kind: 'refused'; code: string };

/**
 * The decision for a call, as the rule says it must be: the request's bounds, then roles and tool list, the
 * tool's schema, then (under policies) a value Cedar cannot hold exactly is `invalid_arguments`, an evaluation
 * error of an enforced policy that could apply is `forbidden`, a forbid or no permit is `forbidden`; a person
 * where the tool or the unattended action asks one.
 */
export function expectedDecision(input: {
  tool: string;
  args: Record<string, unknown>;
  parsed: { ok: true; value: Record<string, unknown> } | { ok: false };
  principal: RefPrincipal;
  policies: Policy[] | undefined;
  hour: number;
  specApproval: boolean;
}): Expected {
  const { tool, parsed, principal, policies, hour } = input;
  if (refusedAsRequest(input.args)) return { kind: 'refused', code: 'invalid_request' };
  const agent = principal.roles.includes('agent') || principal.roles.includes('admin');
  if (!agent || (principal.tools !== '*' && !principal.tools.includes(tool))) return { kind: 'deny', code: 'forbidden' };
  if (!parsed.ok) return { kind: 'deny', code: 'invalid_arguments' };
  if (policies) {
    const value = parsed.value;
    if (FIELDS[tool].some((f) => !representable(f.type, value[f.name]))) return { kind: 'deny', code: 'invalid_arguments' };
    const call = answer(policies, tool, false, value, principal, hour);
    if (!call.allowed) return { kind: 'deny', code: 'forbidden' };
    if (input.specApproval) return { kind: 'approval' };
    const unattended = answer(policies, tool, true, value, principal, hour);
    if (unattended.errored) return { kind: 'deny', code: 'forbidden' };
    return unattended.allowed ? { kind: 'allow' } : { kind: 'approval' };
  }
  return input.specApproval ? { kind: 'approval' } : { kind: 'allow' };
}

/** Values for fields: huge and long-decimal numbers, odd unicode and lone surrogates. */
export const decimals = fc.constantFrom(
  0,
  1,
  12.5,
  500,
  501,
  1000,
  1000.00001,
  1000.0001,
  999.99999,
  0.1 + 0.2,
  -0.5,
  9e14,
  9.2e14,
  1e15,
  2 ** 53 - 1,
  -1e15,
  -9e14,
  1e300,
  1e-7,
);
export const integers = fc.oneof(
  fc.constantFrom(0, 1, 5, 1000, 1001, 9e14, 1e15, 2 ** 53 - 1, -(2 ** 53 - 1), -1e15, 9223372036854, 2 ** 53, 1e300, 1.5),
  fc.integer({ min: -10, max: 2000 }),
);
const LONE = ['\ud800', '\udfff', 'a\udbffz', 'x\udc00'];
export const strings = fc.oneof(
  fc.constantFrom('', 'a', 'suspended', 'EUR', 'x😀y', 'é', 'e\u0301', '\u0000', 'rtl\u202eltr', 'z'.repeat(300), ...LONE),
  fc.string({ unit: 'grapheme', maxLength: 8 }),
  fc.tuple(fc.string({ maxLength: 4 }), fc.constantFrom(...LONE)).map(([s, lone]) => `${s}${lone}`),
);
const anyValue = fc.oneof(decimals, strings, fc.constant(null), fc.boolean());

/** Arguments for a tool: its fields (some optional ones absent or null), sometimes a wrong type, sometimes extra keys. */
export function argumentsArb(tool: string): fc.Arbitrary<Record<string, unknown>> {
  const fields = FIELDS[tool].map((f) => {
    const value: fc.Arbitrary<unknown> =
      f.type === 'long'
        ? integers
        : f.type === 'dec'
          ? decimals
          : f.type === 'enum'
            ? fc.constantFrom('USD', 'EUR', 'USD', 'GBP')
            : strings;
    const slot = f.optional
      ? fc.oneof(fc.constant({ absent: true as const }), fc.constant(null), value)
      : fc.oneof({ weight: 19, arbitrary: value }, { weight: 1, arbitrary: fc.constant({ absent: true as const }) });
    return slot.map((v) => [f.name, v] as const);
  });
  return fc
    .tuple(
      fc.tuple(...fields),
      fc.option(fc.dictionary(fc.constantFrom('extra', 'note', 'x-y'), anyValue, { maxKeys: 2 }), { nil: undefined }),
    )
    .map(([entries, extra]) => {
      const args: Record<string, unknown> = {};
      for (const [name, v] of entries) if (!(v && typeof v === 'object' && 'absent' in v)) args[name] = v;
      return { ...args, ...(extra ?? {}) };
    });
}
