import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunnerConfig } from '../../functions/core/config';
import {
  agentsDoor,
  aiSdkDoor,
  BASE_URL,
  buildWorld,
  type Credential,
  type DoorDecision,
  decisionText,
  differentialTools,
  linkDoor,
  mcpLegacyDoor,
  newRun,
  mcpModernDoor,
  previewDoor,
  submitDoor,
} from '../support/differential-doors';
import {
  argumentsArb,
  type Expected,
  expectedDecision,
  FIELDS,
  forbidApplies,
  type Policy,
  policySetArb,
  policyText,
  type RefPrincipal,
  TOOL_NAMES,
} from '../support/differential-model';
import { startTestIssuer, type TestIssuer } from '../support/oidc-provider';

/**
 * One decision through every door. For generated principals (reached by key, by its SHA-256, by a token mapped
 * through `oauthSubject`, and as a token principal `oauth:<sub>`), tools, arguments (huge and long-decimal
 * numbers, lone surrogates and odd unicode, nulls for optionals, extra keys) and Cedar policies, every door
 * answers what the reference evaluation says: the HTTP preview and submission, `/mcp` at 2025-11-25 and at
 * 2026-07-28, the AI SDK and OpenAI Agents adapters, the re-check before each attempt (a write that cannot be
 * deduplicated is re-checked before it is sent; an approved call before its attempt) and the approval link
 * (opened by an approver reached by key, by a mapped token or as `oauth:<sub>`); and the HTTP doors again with the
 * tools in their own function, as deployed by default (description, argument check and attempts through the
 * Lambda invoke adapters and the `Tools` function's own answer). A forbid that applies to the
 * exact value is never skipped: nothing runs, whatever the door.
 *
 * Seeded and replayable: DIFF_SEED, and DIFF_RUNS for the number of cases (default 150; CI runs 10,000).
 */
const SEED = Number(process.env.DIFF_SEED ?? 20261207);
const RUNS = Number(process.env.DIFF_RUNS ?? 150);
const ONLY = process.env.DIFF_ONLY ? new RegExp(process.env.DIFF_ONLY) : undefined;
/** DIFF_CASE: one case as JSON (a counterexample as printed, `policies` null or absent for none), run alone. */
const REPLAY: Case | undefined = process.env.DIFF_CASE
  ? { ...JSON.parse(process.env.DIFF_CASE), policies: JSON.parse(process.env.DIFF_CASE).policies ?? undefined }
  : undefined;
/**
 * Every case goes through the HTTP preview and submission, the re-check and the approval link with every
 * credential. The model-facing doors (MCP at both revisions, both adapters) cost most: with DIFF_DOORS=rotate
 * (the default above 1,000 cases) each credential takes one of them, a different one from case to case.
 */
const ROTATE = (process.env.DIFF_DOORS ?? (RUNS > 1000 ? 'rotate' : 'all')) === 'rotate';
const MODEL_DOORS = [
  { name: 'MCP 2025-11-25', run: mcpLegacyDoor },
  { name: 'MCP 2026-07-28', run: mcpModernDoor },
  { name: 'AI SDK adapter', run: aiSdkDoor },
  { name: 'OpenAI Agents adapter', run: agentsDoor },
];

const CALLER_KEY = 'caller-key-0123456789abcdef';
const KEYS = { observer: 'observer-key-0123456789ab', approver: 'approver-key-0123456789ab' };

type CallerKind = 'key' | 'keySha256' | 'subject' | 'oauth';
interface Caller {
  kind: CallerKind;
  /** Also reached by a token mapped through `oauthSubject` (key kinds). */
  mapped: boolean;
  roles: ('agent' | 'approver' | 'reviewer' | 'admin')[];
  tools: '*' | string[];
  attributes: Record<string, string | number | string[]>;
}

interface Case {
  caller: Caller;
  oauthTools: '*' | string[];
  tool: string;
  args: Record<string, unknown>;
  policies: Policy[] | undefined;
  hour: number;
  approver: number;
  /** Which model-facing door the first credential takes when they rotate. */
  modelDoor: number;
}

const toolsArb = fc.oneof(fc.constant('*' as const), fc.subarray(TOOL_NAMES));
const callerArb: fc.Arbitrary<Caller> = fc.record({
  kind: fc.constantFrom<CallerKind>('key', 'keySha256', 'subject', 'oauth'),
  mapped: fc.boolean(),
  roles: fc.constantFrom<Caller['roles']>(['agent'], ['agent'], ['agent'], ['admin'], ['agent', 'approver']),
  tools: toolsArb,
  attributes: fc.record(
    {
      tier: fc.constantFrom('suspended', 'suspended', 'gold', 'basic'),
      level: fc.integer({ min: 0, max: 5 }),
      groups: fc.subarray(['ops', 'eu']),
    },
    { requiredKeys: [] },
  ),
});

const caseArb: fc.Arbitrary<Case> = fc.constantFrom(...TOOL_NAMES).chain((tool) =>
  fc.record({
    caller: callerArb,
    oauthTools: toolsArb,
    tool: fc.constant(tool),
    args: argumentsArb(tool),
    policies: fc.oneof(
      { weight: 9, arbitrary: policySetArb.map((set) => (set.length ? set : undefined)) },
      { weight: 1, arbitrary: fc.constant(undefined) },
    ),
    hour: fc.integer({ min: 0, max: 23 }),
    approver: fc.integer({ min: 0, max: 2 }),
    modelDoor: fc.integer({ min: 0, max: 3 }),
  }),
);

let issuer: TestIssuer;
const tokens: Record<'callerMapped' | 'callerOauth' | 'approverMapped' | 'approverOauth', string> = {} as never;

beforeAll(async () => {
  issuer = await startTestIssuer();
  const exp = Math.floor(Date.now() / 1000) + 86_400;
  const mint = (sub: string, scope: string) => issuer.mint({ sub, aud: BASE_URL, exp, scope });
  tokens.callerMapped = await mint('caller-sub', 'toolrunner/agent');
  tokens.callerOauth = await mint('agent-sub', 'toolrunner/agent');
  tokens.approverMapped = await mint('approver-sub', 'toolrunner/approver');
  tokens.approverOauth = await mint('approver-oauth', 'toolrunner/approver');
});
afterAll(async () => issuer?.stop());

function configOf(c: Case): RunnerConfig {
  const { caller } = c;
  const principals: RunnerConfig['principals'] = [
    // Names every attribute the policies read, so their types are known whoever calls.
    { id: 'observer', key: KEYS.observer, roles: ['reviewer'], tools: [], attributes: { tier: 'basic', level: 1, groups: ['ops'] } },
    { id: 'approver-key', key: KEYS.approver, roles: ['approver'], tools: [] },
    { id: 'approver-mapped', oauthSubject: `${issuer.issuer}|approver-sub`, roles: ['approver'], tools: [] },
  ];
  if (caller.kind !== 'oauth') {
    const credential =
      caller.kind === 'key'
        ? { key: CALLER_KEY }
        : caller.kind === 'keySha256'
          ? { keySha256: createHash('sha256').update(CALLER_KEY).digest('hex') }
          : {};
    const subject = caller.kind === 'subject' || caller.mapped ? { oauthSubject: `${issuer.issuer}|caller-sub` } : {};
    principals.push({
      id: 'caller',
      ...credential,
      ...subject,
      roles: caller.roles,
      tools: caller.tools,
      ...(Object.keys(caller.attributes).length ? { attributes: caller.attributes } : {}),
    });
  }
  return {
    principals,
    approvalTtlSeconds: 600,
    oauth: {
      issuer: issuer.issuer,
      principalClaim: 'sub',
      scopeRoles: { 'toolrunner/agent': ['agent'], 'toolrunner/approver': ['approver'] },
      tools: c.oauthTools,
    },
    ...(c.policies ? { policies: policyText(c.policies) } : {}),
  };
}

function credentialsOf(caller: Caller): Credential[] {
  if (caller.kind === 'oauth') return [{ kind: 'token-oauth', bearer: tokens.callerOauth }];
  if (caller.kind === 'subject') return [{ kind: 'token-mapped', bearer: tokens.callerMapped }];
  return [
    { kind: caller.kind, bearer: CALLER_KEY },
    ...(caller.mapped ? [{ kind: 'token-mapped' as const, bearer: tokens.callerMapped }] : []),
  ];
}

/** The principal as the rule says every door sees it: the config entry whatever the credential, or the token's. */
function referencePrincipal(c: Case): RefPrincipal {
  if (c.caller.kind === 'oauth') return { roles: ['agent'], tools: c.oauthTools, attributes: {} };
  return { roles: c.caller.roles, tools: c.caller.tools, attributes: c.caller.attributes };
}

const tools = differentialTools([]);
const timings = new Map<string, number>();
/** Where a case's time goes, door by door (the survey prints it). */
async function timed<T>(name: string, work: () => T | Promise<T>): Promise<T> {
  const t0 = performance.now();
  try {
    return await work();
  } finally {
    timings.set(name, (timings.get(name) ?? 0) + performance.now() - t0);
  }
}

/** The tool's schema on the arguments, a strict-mode model's nulls for optionals meaning absent. */
function parsedOf(tool: string, args: Record<string, unknown>) {
  const optional = new Set(FIELDS[tool].filter((f) => f.optional).map((f) => f.name));
  const cleaned = Object.fromEntries(Object.entries(args).filter(([k, v]) => !(v === null && optional.has(k))));
  const parsed = tools.find((t) => t.name === tool)!.inputSchema.safeParse(cleaned);
  return parsed.success ? { ok: true as const, value: parsed.data as Record<string, unknown> } : { ok: false as const };
}

const APPROVERS = () => [
  { name: 'approver-key (key)', bearer: KEYS.approver },
  { name: 'approver-mapped (token)', bearer: tokens.approverMapped },
  { name: 'oauth:approver-oauth (token)', bearer: tokens.approverOauth },
];

/** `JSON.stringify` shows lone surrogates as escapes: the counterexample can be pasted back. */
const show = (value: unknown) => JSON.stringify(value);

interface Outcome {
  expected: Expected;
  doors: { door: string; decision: DoorDecision }[];
  executions: { tool: string; input: unknown }[];
  forbidden: boolean;
  /** Do the roles and tool list let the principal call the tool at all? */
  mayCall: boolean;
  parsed: ReturnType<typeof parsedOf>;
}

async function runCase(c: Case): Promise<Outcome> {
  const config = configOf(c);
  const startAt = Date.parse(`2026-12-02T${String(c.hour).padStart(2, '0')}:10:00Z`);
  const world = await timed('build', () => buildWorld(config, startAt));
  const isolated = await timed('build', () => buildWorld(config, startAt, { isolated: true }));
  const principal = referencePrincipal(c);
  const parsed = parsedOf(c.tool, c.args);
  const spec = tools.find((t) => t.name === c.tool)!;
  const specApproval = parsed.ok && typeof spec.approval === 'function' ? spec.approval(parsed.value) : spec.approval === 'always';
  const expected = expectedDecision({ tool: c.tool, args: c.args, parsed, principal, policies: c.policies, hour: c.hour, specApproval });
  const doors: Outcome['doors'] = [];
  const approvers = APPROVERS();
  for (const [index, cred] of credentialsOf(c.caller).entries()) {
    const via = (door: string) => `${door} [${cred.kind}]`;
    const runId = await newRun(world, cred.bearer);
    doors.push({
      door: via('HTTP preview'),
      decision: await timed('preview', () => previewDoor(world, cred.bearer, runId, c.tool, c.args)),
    });
    const submitted = await timed('submit', () => submitDoor(world, cred.bearer, runId, c.tool, c.args));
    doors.push({ door: via('HTTP submit (+ re-check)'), decision: submitted.decision });
    const waiting = submitted.decision.kind === 'approval' ? submitted.operationId : undefined;
    if (waiting) {
      // Each submission's approval is decided by another kind of approver.
      const approver = approvers[(c.approver + index) % approvers.length];
      const linked = await timed('link', () => linkDoor(world, approver.bearer, waiting));
      // Approved, the call runs: the re-check before its attempt must agree with the submission.
      doors.push({
        door: via(`approval link by ${approver.name} (+ re-check)`),
        decision: linked.kind === 'allow' ? { kind: 'approval' } : linked,
      });
    }
    // The model-facing doors: all of them, or (ROTATE) one per credential, a different one each case.
    for (const [n, door] of MODEL_DOORS.entries())
      if (!ROTATE || n === (c.modelDoor + index) % MODEL_DOORS.length)
        doors.push({ door: via(door.name), decision: await timed(door.name, () => door.run(world, cred.bearer, c.tool, c.args)) });
    // The deployed default: the tools in their own function, known here from their description and each call's
    // check at validation. Its world's executions join the case's: a forbid holds there too.
    const isolatedRunId = await newRun(isolated, cred.bearer);
    doors.push({
      door: via('HTTP preview, tools isolated'),
      decision: await timed('isolated', () => previewDoor(isolated, cred.bearer, isolatedRunId, c.tool, c.args)),
    });
    const inIsolation = await timed('isolated', () => submitDoor(isolated, cred.bearer, isolatedRunId, c.tool, c.args));
    doors.push({ door: via('HTTP submit, tools isolated (+ re-check)'), decision: inIsolation.decision });
    if (inIsolation.decision.kind === 'approval' && inIsolation.operationId) {
      const approver = approvers[(c.approver + index + 1) % approvers.length];
      const linked = await timed('isolated', () => linkDoor(isolated, approver.bearer, inIsolation.operationId!));
      doors.push({
        door: via(`approval link by ${approver.name}, tools isolated (+ re-check)`),
        decision: linked.kind === 'allow' ? { kind: 'approval' } : linked,
      });
    }
  }
  const forbidden = parsed.ok && c.policies !== undefined && forbidApplies(c.policies, c.tool, parsed.value, principal, c.hour);
  const mayCall = principal.tools === '*' || principal.tools.includes(c.tool);
  const executions = [...world.executions, ...isolated.executions].map(({ tool, input }) => ({ tool, input }));
  return { expected, doors, executions, forbidden, mayCall, parsed };
}

/** What is wrong with one case's outcome: each door that disagrees, anything run past a forbid, any input changed. */
function problemsOf(c: Case, o: Outcome): string[] {
  const want = decisionText(o.expected);
  // A tool an adapter does not offer is right exactly when the principal may not call it.
  const agrees = (d: DoorDecision) => (d.kind === 'hidden' ? o.mayCall === false : decisionText(d) === want);
  const problems = o.doors.filter((d) => !agrees(d.decision)).map((d) => `${d.door}: ${decisionText(d.decision)}`);
  if (o.forbidden && o.executions.length > 0) problems.push(`a forbid applies, yet ${c.tool} ran ${o.executions.length} time(s)`);
  for (const e of o.executions)
    if (o.parsed.ok && show(e.input) !== show(o.parsed.value))
      problems.push(`${e.tool} received ${show(e.input)}, not ${show(o.parsed.value)}`);
  return problems;
}

function describeCase(c: Case, o: Outcome, problems: string[]): string {
  return [
    `expected ${decisionText(o.expected)}${o.forbidden ? ' (an enforced forbid applies to the exact value)' : ''}; disagreeing:`,
    ...problems.map((p) => `  ${p}`),
    `caller: ${show(c.caller)}${c.caller.kind === 'oauth' ? ` oauth.tools ${show(c.oauthTools)}` : ''}`,
    `call: ${c.tool} ${show(c.args)} at ${String(c.hour).padStart(2, '0')}:10 UTC`,
    `policies:\n${c.policies ? policyText(c.policies) : '(none)'}`,
  ].join('\n');
}

describe('one decision through every door (differential, model-based)', () => {
  it(`agrees with the reference through every door over ${RUNS} generated cases (seed ${SEED})`, async () => {
    await fc.assert(
      fc.asyncProperty(REPLAY ? fc.constant(REPLAY) : caseArb, async (c) => {
        const outcome = await runCase(c);
        // DIFF_ONLY (a regular expression on the report below): fail on matching cases only, so one kind shrinks on its own.
        const problems = problemsOf(c, outcome);
        const report = problems.length > 0 ? describeCase(c, outcome, problems) : '';
        if (report && (!ONLY || ONLY.test(report))) throw new Error(report);
      }),
      { numRuns: RUNS, seed: SEED },
    );
  }, 3_600_000);

  // DIFF_SURVEY=1: every case runs, and the disagreements are counted by kind instead of stopping at the first.
  if (process.env.DIFF_SURVEY === '1')
    it('survey: every disagreement, counted by door and answer', async () => {
      const counts = new Map<string, { n: number; example: string }>();
      let failing = 0;
      const expectedKinds = new Map<string, number>();
      for (const c of fc.sample(caseArb, { numRuns: RUNS, seed: SEED })) {
        const outcome = await runCase(c);
        const kind = `${decisionText(outcome.expected)}${outcome.forbidden ? ' (forbid applies)' : ''}`;
        expectedKinds.set(kind, (expectedKinds.get(kind) ?? 0) + 1);
        const problems = problemsOf(c, outcome);
        if (problems.length > 0) failing++;
        for (const p of problems) {
          const key = `${decisionText(outcome.expected)} <- ${p.replace(/received .*/, 'received a changed input')}`;
          const seen = counts.get(key) ?? { n: 0, example: describeCase(c, outcome, problems) };
          seen.n++;
          counts.set(key, seen);
        }
      }
      const lines = [...counts.entries()].sort((a, b) => b[1].n - a[1].n);
      console.log(`${failing}/${RUNS} cases disagree\n${lines.map(([k, v]) => `${v.n}\t${k}`).join('\n')}`);
      console.log(`expected: ${[...expectedKinds.entries()].map(([k, v]) => `${k} ${v}`).join(', ')}`);
      console.log(`time by door (ms): ${[...timings.entries()].map(([k, v]) => `${k} ${Math.round(v)}`).join(', ')}`);
      for (const [k, v] of lines.slice(0, Number(process.env.DIFF_EXAMPLES ?? 12))) console.log(`--- ${k}\n${v.example}`);
      expect(failing).toBe(0);
    }, 3_600_000);
});
