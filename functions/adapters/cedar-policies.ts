import { createHash } from 'node:crypto';
import { setFlagsFromString } from 'node:v8';
import * as cedar from '@cedar-policy/cedar-wasm/nodejs';
import {
  CALL_GROUP,
  type CedarRequest,
  type CedarType,
  cedarRequestOf,
  type PolicyAnswer,
  type PolicyError,
  type PolicyEvaluator,
  type PolicyRequest,
  type PrincipalAttribute,
  policySchema,
  principalAttributeProblems,
  principalAttributeTypes,
  UNATTENDED_GROUP,
} from '../core/policy-schema';
import type { ToolSpec } from '../core/tool-spec';

// Node 20's V8 (11.3) aborts the process ("unreachable code" in the deoptimizer) after many optimized calls
// into the engine when it inlines the JS-to-WebAssembly call; Node 22 and 24 (Lambda's) do not. Where the
// engine is loaded on V8 11, that inlining is turned off (only calls into WebAssembly lose it).
if (Number(process.versions.v8.split('.')[0]) < 12) setFlagsFromString('--no-turbo-inline-js-wasm-calls');

/** Why a policy text was refused at load: its line (1-based) where Cedar gives one, and the reason. */
export interface PolicyProblem {
  line?: number;
  message: string;
}

export type CompiledPolicies = { ok: true; evaluator: PolicyEvaluator } | { ok: false; problems: PolicyProblem[] };

type PrincipalEntry = { id?: string; attributes?: Record<string, PrincipalAttribute> };

/**
 * Parses the policy text, validates it (strict mode) against the schema of these tools, and loads it into the
 * engine once: each evaluation after that is one call into the in-process Wasm engine, with no parsing.
 * Compiled sets are kept per (text, tools, attribute types), so a configuration re-read unchanged costs nothing.
 */
export function compilePolicies(
  text: string,
  tools: readonly Pick<ToolSpec, 'name' | 'inputSchema'>[],
  principals: readonly PrincipalEntry[],
): CompiledPolicies {
  const attributes = principalAttributeTypes(principals);
  // The principals are configuration: one whose attributes the policies could not see exactly is refused here, not per call.
  const misfits = principalAttributeProblems(principals, attributes);
  if (misfits.length > 0) return { ok: false, problems: misfits.map((message) => ({ message })) };
  const schema = policySchema(tools, attributes);
  const key = createHash('sha256').update(text).update('\0').update(JSON.stringify(schema)).digest('hex').slice(0, 32);
  const cached = compiled.get(key);
  if (cached) return cached;
  const result = compile(text, schema, attributes, key);
  compiled.set(key, result);
  if (compiled.size > 16) compiled.delete(compiled.keys().next().value as string);
  return result;
}

const compiled = new Map<string, CompiledPolicies>();

function compile(text: string, schema: Record<string, unknown>, attributes: Record<string, CedarType>, key: string): CompiledPolicies {
  const parts = cedar.policySetTextToParts(text);
  if (parts.type === 'failure') return { ok: false, problems: parts.errors.map((e) => problemOf(text, e)) };
  if (parts.policy_templates.length > 0)
    return { ok: false, problems: [{ message: 'policy templates are not supported; write static policies' }] };
  const validation = cedar.validate({
    schema: schema as cedar.Schema,
    policies: { staticPolicies: text },
    validationSettings: { mode: 'strict' },
  });
  if (validation.type === 'failure') return { ok: false, problems: validation.errors.map((e) => problemOf(text, e)) };
  if (validation.validationErrors.length > 0)
    return { ok: false, problems: validation.validationErrors.map((e) => problemOf(text, e.error, e.policyId)) };

  const enforced: Record<string, string> = {};
  const all: Record<string, string> = {};
  const scopes = new Map<string, ActionScope>();
  for (const [index, policy] of parts.policies.entries()) {
    const json = cedar.policyToJson(policy);
    const annotations = json.type === 'success' ? (json.json.annotations ?? {}) : {};
    const id = annotations.id ?? `policy${index}`;
    if (id in all) return { ok: false, problems: [{ line: lineOfPolicy(text, index), message: `two policies have @id("${id}")` }] };
    const mode = annotations.mode;
    if (mode !== undefined && mode !== 'log_only' && mode !== 'enforce')
      return { ok: false, problems: [{ line: lineOfPolicy(text, index), message: `@mode is "log_only" or "enforce", not "${mode}"` }] };
    all[id] = policy;
    if (mode !== 'log_only') enforced[id] = policy;
    scopes.set(id, json.type === 'success' ? (json.json.action as ActionScope) : { op: 'All' });
  }
  const shadowed = Object.keys(all).length > Object.keys(enforced).length;
  const shadowIds = new Set(Object.keys(all).filter((id) => !(id in enforced)));
  // Cedar evaluates every policy of a set (a few microseconds each in WebAssembly), so each action gets the set
  // of the policies whose action scope can match it, loaded on its first request.
  const loaded = new Set<string>();
  const setFor = (kind: 'enforced' | 'all', action: string, group: string): string => {
    const setId = `${kind}:${key}:${action}`;
    if (!loaded.has(setId)) {
      const source = kind === 'all' ? all : enforced;
      load(setId, Object.fromEntries(Object.entries(source).filter(([id]) => matchesAction(scopes.get(id)!, action, group))));
      loaded.add(setId);
    }
    return setId;
  };
  return {
    ok: true,
    evaluator: {
      size: Object.keys(all).length,
      evaluate(request: PolicyRequest): PolicyAnswer {
        const built = cedarRequestOf(request, attributes);
        if (!built.ok) return { allowed: false, determining: [], unrepresentable: built.misfit };
        const cedarRequest = built.request;
        const action = cedarRequest.action.id;
        const group = request.action === 'call' ? CALL_GROUP : UNATTENDED_GROUP;
        if (!shadowed) return failClosed(decide(setFor('enforced', action, group), cedarRequest));
        // One evaluation of every policy usually says both what is enforced and what the log-only ones would do.
        const would = decide(setFor('all', action, group), cedarRequest);
        const enforcedIds = would.determining.filter((id) => !shadowIds.has(id));
        const enforcedErrors = would.errors.filter((e) => e.policyId === undefined || !shadowIds.has(e.policyId));
        const tookPart = enforcedIds.length < would.determining.length || enforcedErrors.length < would.errors.length;
        if (!tookPart) return failClosed(would);
        // Only log-only policies decided: what the enforced ones decide alone takes its own evaluation.
        const answer =
          enforcedIds.length > 0
            ? { allowed: would.allowed, determining: enforcedIds, errors: enforcedErrors }
            : decide(setFor('enforced', action, group), cedarRequest);
        return { ...failClosed(answer), shadow: failClosed(would) };
      },
    },
  };
}

type EntityRef = { type?: string; id?: string; __entity?: { type: string; id: string } };
type ActionScope = { op: string; entity?: EntityRef; entities?: EntityRef[] };

/** Whether a policy's action scope (`action`, `action == A`, `action in G`, `action in [A, B]`) can match this action. */
function matchesAction(scope: ActionScope, action: string, group: string): boolean {
  const idOf = (ref: EntityRef) => ref.__entity?.id ?? ref.id;
  if (scope.op === '==') return scope.entity !== undefined && idOf(scope.entity) === action;
  if (scope.op === 'in')
    return (scope.entities ?? (scope.entity ? [scope.entity] : [])).some((ref) => [action, group].includes(idOf(ref) ?? ''));
  // `All`, and any scope this reading does not know: the policy stays in (Cedar decides).
  return true;
}

function load(id: string, policies: Record<string, string>): void {
  const loaded = cedar.preparsePolicySet(id, { staticPolicies: policies });
  if (loaded.type === 'failure') throw new Error(`the policy engine refused a validated set: ${loaded.errors[0]?.message}`);
}

/** Cedar's answer, with the policies that erred on this request (Cedar skips them) kept beside it. */
type Evaluation = { allowed: boolean; determining: string[]; errors: PolicyError[] };

function decide(setId: string, request: CedarRequest): Evaluation {
  let out: cedar.AuthorizationAnswer;
  try {
    out = cedar.statefulIsAuthorized({
      principal: request.principal,
      action: request.action,
      resource: request.resource,
      context: request.context as cedar.Context,
      entities: request.entities as cedar.Entities,
      preparsedPolicySetId: setId,
      validateRequest: false,
    });
  } catch (error) {
    return { allowed: false, determining: [], errors: [{ reason: withoutValues((error as Error).message) }] };
  }
  if (out.type === 'failure')
    return { allowed: false, determining: [], errors: out.errors.map((e) => ({ reason: withoutValues(e.message) })) };
  const errors = out.response.diagnostics.errors
    .map((e) => ({ policyId: e.policyId, reason: withoutValues(e.error.message) }))
    .sort((a, b) => a.policyId.localeCompare(b.policyId));
  return { allowed: out.response.decision === 'allow', determining: [...out.response.diagnostics.reason].sort(), errors };
}

/** Cedar quotes the values it failed on (`10000`); a refusal names the policy and the reason, never the arguments. */
function withoutValues(message: string): string {
  return message.replace(/`[^`]*`/g, '…');
}

/**
 * A decision that cannot be evaluated denies: where a policy that could apply erred (Cedar would skip it and let
 * a permit win) or the engine failed, the call is refused. A forbid that applied still decides by itself;
 * otherwise the policies that erred are the determining ones.
 */
function failClosed(evaluation: Evaluation): PolicyAnswer {
  const { allowed, determining, errors } = evaluation;
  if (errors.length === 0) return { allowed, determining };
  const forbidden = !allowed && determining.length > 0;
  const failed = [...new Set(errors.flatMap((e) => (e.policyId === undefined ? [] : [e.policyId])))];
  return { allowed: false, determining: forbidden ? determining : failed, errors };
}

function problemOf(text: string, error: cedar.DetailedError, policyId?: string): PolicyProblem {
  const start = error.sourceLocations?.[0]?.start;
  const label = error.sourceLocations?.[0]?.label;
  const message = [error.message, label, error.help].filter(Boolean).join(': ');
  const line =
    start !== undefined ? lineAt(text, start) : policyId ? lineOfPolicy(text, Number(policyId.replace('policy', ''))) : undefined;
  return line === undefined ? { message } : { line, message };
}

function lineAt(text: string, offset: number): number {
  return text.slice(0, offset).split('\n').length;
}

/** The line where the index-th policy starts (Cedar names unannotated policies policy0, policy1, …). */
function lineOfPolicy(text: string, index: number): number | undefined {
  const parts = cedar.policySetTextToParts(text);
  if (parts.type === 'failure' || !parts.policies[index]) return undefined;
  let from = 0;
  for (let i = 0; i < index; i++) from = text.indexOf(parts.policies[i], from) + parts.policies[i].length;
  const at = text.indexOf(parts.policies[index], from);
  return at < 0 ? undefined : lineAt(text, at);
}

/** Problems as one line each, as the load log and the CLI print them. */
export function describePolicyProblems(origin: string, problems: readonly PolicyProblem[]): string {
  return problems.map((p) => `${origin}${p.line === undefined ? '' : `:${p.line}`}: ${p.message}`).join('\n');
}

/** The schema policies are validated against, in Cedar's schema syntax (`toolrunner policy schema`), or as JSON. */
export function policySchemaText(
  tools: readonly Pick<ToolSpec, 'name' | 'inputSchema'>[],
  principals: readonly PrincipalEntry[],
  format: 'cedar' | 'json' = 'cedar',
): string {
  const schema = policySchema(tools, principalAttributeTypes(principals));
  if (format === 'json') return `${JSON.stringify(schema, null, 2)}\n`;
  const text = cedar.schemaToText(schema as cedar.Schema);
  if (text.type === 'failure') throw new Error(`the schema has no Cedar text form: ${text.errors[0]?.message}`);
  return `${text.text.trimEnd()}\n`;
}
