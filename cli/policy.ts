import { microsOfCents } from '../functions/core/spend';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { z } from 'zod';
import { compilePolicies, describePolicyProblems, policySchemaText } from '../functions/adapters/cedar-policies';
import { decideCall } from '../functions/core/call-policy';
import { parseArguments } from '../functions/core/canonical';
import { type RunnerConfig, RunnerConfigSchema } from '../functions/core/config';
import type { Principal } from '../functions/core/model';
import { principalIn } from '../functions/core/policy';
import { makeRegistry, type ToolSpec } from '../functions/core/tool-spec';
import { makeDemoTools } from '../functions/tools/demo-tools';

/** One case of `toolrunner policy test`: who calls what with which arguments, and what the policies must decide. */
const CaseSchema = z.strictObject({
  /** A principal of the configuration by id, or one written out (roles default to agent, tools to every tool). */
  principal: z.union([
    z.string().min(1),
    z.strictObject({
      id: z.string().min(1),
      roles: z.array(z.enum(['agent', 'approver', 'reviewer', 'admin'])).default(['agent']),
      tools: z.union([z.literal('*'), z.array(z.string())]).default('*'),
      attributes: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.array(z.string())])).optional(),
    }),
  ]),
  tool: z.string().min(1),
  input: z.unknown(),
  run: z
    .strictObject({
      turns: z.number().int().min(0).default(0),
      toolCalls: z.number().int().min(0).default(0),
      spentCents: z.number().int().min(0).default(0),
      /** The part of `spentCents` spent on model calls (the rest on tools). */
      modelSpentCents: z.number().int().min(0).default(0),
      elapsedSeconds: z.number().int().min(0).default(0),
    })
    .optional(),
  /** When the call is made (ISO 8601); default: now. */
  now: z.iso.datetime({ offset: true }).optional(),
  expect: z.enum(['allow', 'deny', 'require_approval']),
});
const CasesSchema = z.array(CaseSchema).min(1);
type PolicyCase = z.infer<typeof CaseSchema>;

export interface PolicyCommandIo {
  out(line: string): void;
  /** The configuration document and where it lives (`--config PATH`, else TOOLRUNNER_CONFIG). */
  configPath: string | undefined;
  tools: ToolSpec[] | undefined;
}

/** `toolrunner policy schema [--json]`: the schema policies are checked against, from the registered tools. */
export function printSchema(io: PolicyCommandIo, json: boolean): void {
  const config = io.configPath ? readConfig(io.configPath, { keysOptional: true }) : undefined;
  io.out(policySchemaText(toolsOf(io), config?.principals ?? [], json ? 'json' : 'cedar'));
}

/** `toolrunner policy test --cases FILE`: evaluates each case as submission would; false when any case is not as expected. */
export function testPolicies(io: PolicyCommandIo, casesPath: string): boolean {
  if (!io.configPath) throw new Error('name the configuration whose policies to test: --config PATH (or TOOLRUNNER_CONFIG)');
  const config = readConfig(io.configPath, { keysOptional: true });
  const text =
    config.policies ?? (config.policiesFile ? readFileSync(resolve(dirname(io.configPath), config.policiesFile), 'utf8') : undefined);
  if (text === undefined) throw new Error(`${io.configPath} has no policies or policiesFile`);
  const tools = toolsOf(io);
  const compiled = compilePolicies(text, tools, config.principals);
  if (!compiled.ok)
    throw new Error(`the policies do not load:\n${describePolicyProblems(config.policiesFile ?? 'policies', compiled.problems)}`);
  const cases = parseCases(casesPath);
  const registry = makeRegistry(tools);
  let failed = 0;
  for (const [index, c] of cases.entries()) {
    const got = decide(c, config, registry, compiled.evaluator);
    const ok = got.decision === c.expect;
    if (!ok) failed++;
    io.out(
      `${ok ? 'ok  ' : 'FAIL'} #${index + 1} ${c.tool} by ${typeof c.principal === 'string' ? c.principal : c.principal.id}: ${got.decision}` +
        `${ok ? '' : ` (expected ${c.expect})`} — ${got.message}${got.ids ? ` [${got.ids}]` : ''}\n`,
    );
  }
  io.out(`${cases.length - failed} of ${cases.length} cases as expected\n`);
  return failed === 0;
}

function decide(
  c: PolicyCase,
  config: RunnerConfig,
  registry: ReturnType<typeof makeRegistry>,
  policy: Parameters<typeof decideCall>[0]['policy'],
) {
  const principal: Principal | undefined =
    typeof c.principal === 'string' ? principalIn(config, c.principal) : { ...c.principal, attributes: c.principal.attributes };
  const now = c.now ? Date.parse(c.now) : Date.now();
  const facts = c.run ?? { turns: 0, toolCalls: 0, spentCents: 0, modelSpentCents: 0, elapsedSeconds: 0 };
  const decided = decideCall({
    tool: registry.get(c.tool),
    toolName: c.tool,
    principal,
    arguments: parseArguments(c.input ?? {}),
    approvalTtlSeconds: config.approvalTtlSeconds,
    now,
    policy,
    run: {
      usage: {
        turns: facts.turns,
        toolCalls: facts.toolCalls,
        spendCents: Math.max(0, facts.spentCents - facts.modelSpentCents),
        ...(facts.modelSpentCents ? { modelSpendMicros: microsOfCents(facts.modelSpentCents) } : {}),
      },
      createdAt: new Date(now - facts.elapsedSeconds * 1000).toISOString(),
    },
  });
  const ids = decided.policies
    ? [
        `call: ${decided.policies.call.join(', ') || 'none'}`,
        decided.policies.unattended && `unattended: ${decided.policies.unattended.join(', ') || 'none'}`,
      ]
        .filter(Boolean)
        .join('; ')
    : undefined;
  return { decision: decided.decision, message: decided.message, ids };
}

function toolsOf(io: PolicyCommandIo): ToolSpec[] {
  // Without --tools, the demo tools (their upstream is never called: only their schemas matter here).
  return io.tools ?? makeDemoTools('http://127.0.0.1:1');
}

/**
 * The configuration document at `path`. With `keysOptional`, principals may come without a key, hash or OAuth
 * subject, and `principals` may be left out: deciding a case needs a principal's roles, tools and attributes,
 * never its credentials, so a policies file can be tested beside a config written for it (no running stack).
 */
function readConfig(path: string, options: { keysOptional?: boolean } = {}): RunnerConfig {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new Error(`${path}: ${(error as NodeJS.ErrnoException).code ?? 'not valid JSON'}`, { cause: error });
  }
  if (options.keysOptional) raw = withStandInKeys(raw);
  const parsed = RunnerConfigSchema.safeParse(raw);
  if (!parsed.success)
    throw new Error(`${path}: invalid configuration: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return parsed.data;
}

function parseCases(path: string): PolicyCase[] {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new Error(`--cases ${path}: ${(error as NodeJS.ErrnoException).code ?? 'not valid JSON'}`, { cause: error });
  }
  const parsed = CasesSchema.safeParse(raw);
  if (!parsed.success)
    throw new Error(`--cases ${path}: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(list)'}: ${i.message}`).join('; ')}`);
  return parsed.data;
}

/** A hash no key has (all zeros), for principals given without credentials: it is only read here, never served. */
const STAND_IN_KEY_SHA256 = '0'.repeat(64);

function withStandInKeys(raw: unknown): unknown {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return raw;
  const document = raw as { principals?: unknown };
  if (document.principals === undefined) return { ...document, principals: [] };
  if (!Array.isArray(document.principals)) return raw;
  return {
    ...document,
    principals: document.principals.map((p: unknown) =>
      typeof p === 'object' && p !== null && !('key' in p) && !('keySha256' in p) && !('oauthSubject' in p)
        ? { ...p, keySha256: STAND_IN_KEY_SHA256 }
        : p,
    ),
  };
}
