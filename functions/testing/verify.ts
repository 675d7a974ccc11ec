import { isLoopbackAddress } from '../core/loopback';
import { newIdempotencyKey } from '../core/ids';
import type { ToolContext, ToolSpec } from '../core/tool-spec';
import { type FaultName, faultingFetch, type ScriptedFault, type SeenRequest } from './faults';
import { type ExecuteSettled, inProcessRunner } from './in-process';
import { judge, type Verdict } from './verdict';

/** One sample input of a tool. */
export interface VerifyCase {
  name: string;
  input: unknown;
}

/** What verify runs each case under: no fault first, then each fault an upstream shows. */
export const VERIFY_FAULTS = [
  'none',
  'response_lost',
  'connection_reset',
  'unavailable',
  'rate_limited',
  'slow_answer',
  'second_delivery',
] as const;
export type VerifyFault = (typeof VERIFY_FAULTS)[number];

/** One row of the result: a tool's case under a fault (or one of the contract's own checks), and its verdict. */
export type VerifyCell = { tool: string; case: string; check: string; ms: number } & Verdict;

export interface VerifyResult {
  cells: VerifyCell[];
  /** Per tool: how long its cases took, and what it could declare to be checked better. */
  tools: { name: string; ms: number; notes: string[] }[];
}

/** Every host the tools' first requests go to, found by running each tool once with nothing sent. */
export async function probeHosts(tools: ToolSpec[], cases: Map<string, VerifyCase[]>): Promise<Map<string, string[]>> {
  const hosts = new Map<string, string[]>();
  const original = globalThis.fetch;
  for (const tool of tools) {
    const first = cases.get(tool.name)?.[0];
    if (!first) continue;
    const seen = new Set<string>();
    // Nothing leaves the process: every request is refused as if the host did not listen.
    const refuse: typeof fetch = async (input, init) => {
      seen.add(new URL(new Request(input, init).url).host);
      throw new TypeError('fetch failed', { cause: Object.assign(new Error('verify probe'), { code: 'ECONNREFUSED' }) });
    };
    globalThis.fetch = refuse;
    try {
      await tool.execute(probeContext(tool, refuse), tool.inputSchema.parse(first.input)).catch(() => undefined);
    } finally {
      globalThis.fetch = original;
    }
    hosts.set(tool.name, [...seen]);
  }
  return hosts;
}

export function isLoopbackHost(host: string): boolean {
  return isLoopbackAddress(new URL(`http://${host}`).hostname);
}

function probeContext(tool: ToolSpec, fetchFn: typeof fetch, idempotencyKey = newIdempotencyKey()): ToolContext {
  return {
    idempotencyKey,
    attempt: 1,
    deadline: Date.now() + tool.timeoutMs,
    signal: AbortSignal.timeout(tool.timeoutMs),
    onUpstreamStatus: () => undefined,
    fetch: fetchFn,
  };
}

/** The effects a case made, as the tool lets verify see them: `verify.effects` before and after, else `reconcile`. */
async function effectCounter(tool: ToolSpec, input: unknown): Promise<(key: string) => Promise<number | undefined>> {
  if (tool.verify?.effects) {
    const before = await tool.verify.effects(input);
    return async () => (await tool.verify!.effects!(input)) - before;
  }
  if (tool.reconcile) return async (key) => ((await tool.reconcile!(probeContext(tool, globalThis.fetch, key), input)).found ? 1 : 0);
  return async () => undefined;
}

/**
 * Runs each tool's cases through the runner's engine in this process, once without a fault and once under
 * each fault, against the tools' own upstreams, and judges each run (`judge`). Then the contract's own
 * checks: `reconcile` finds the effect of a key it was sent and answers `{ found: false }` for one never sent.
 */
export async function verifyTools(
  tools: ToolSpec[],
  cases: Map<string, VerifyCase[]>,
  onCell: (cell: VerifyCell) => void = () => undefined,
): Promise<VerifyResult> {
  const engine = inProcessRunner(tools);
  const cells: VerifyCell[] = [];
  const summary: VerifyResult['tools'] = [];
  let callNumber = 0;
  const add = (cell: VerifyCell) => {
    cells.push(cell);
    onCell(cell);
  };
  for (const tool of tools) {
    const toolStarted = performance.now();
    const notes: string[] = [];
    if (tool.verify?.effects && !tool.reconcile)
      notes.push(
        `${tool.name} is weaker than it could be: verify.effects counts its effects, but without reconcile an unknown outcome waits for a person`,
      );
    const samples = cases.get(tool.name) ?? [];
    const committed = new Map<string, string>();
    // Each fault over every case in turn (not each case under every fault): cases can then undo one another,
    // so a write that sets a value makes a change in every run.
    for (const fault of VERIFY_FAULTS) {
      for (const sample of samples) {
        const started = performance.now();
        const script: ScriptedFault[] =
          fault === 'none'
            ? []
            : fault === 'second_delivery'
              ? [{ fault: 'second_delivery' }, ...(tool.supportsIdempotency ? [{ fault: 'duplicate_request' as FaultName }] : [])]
              : [{ fault }];
        const requests: SeenRequest[] = [];
        const executions: Promise<ExecuteSettled>[] = [];
        const count = await effectCounter(tool, sample.input);
        const outcome = await engine.call(tool.name, sample.input, `verify_${++callNumber}`, {
          fetchFor: faultingFetch(script, () => (input, init) => globalThis.fetch(input, init), requests),
          secondDelivery: fault === 'second_delivery',
          watchExecute: (settled) => executions.push(settled),
        });
        // A tool that ignored its signal may still be running: its answer is part of what it did.
        const settled = await Promise.all(executions);
        const key = outcome.operation.idempotencyKey;
        const effects = await count(key);
        if (fault === 'none' && outcome.envelope.status === 'succeeded') committed.set(sample.name, key);
        const executeRequests = requests.filter((r) => r.phase === 'execute');
        const verdict = judge({
          tool: { name: tool.name, risk: tool.risk, supportsIdempotency: tool.supportsIdempotency, hasReconcile: !!tool.reconcile },
          fault,
          status: outcome.envelope.status,
          effects,
          executeRequests: executeRequests.length,
          methods: executeRequests.map((r) => r.method),
          outputProblems: settled.flatMap((s) => {
            if (!s.ok) return [];
            const parsed = tool.outputSchema.safeParse(s.value);
            return parsed.success ? [] : [parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')];
          }),
          ...(fault === 'slow_answer' ? { overranMs: Math.round(Math.max(0, ...settled.map((s) => s.elapsedMs)) - tool.timeoutMs) } : {}),
        });
        const said =
          verdict.verdict === 'held' ? verdict : { ...verdict, reason: `${verdict.reason} (envelope ${outcome.envelope.status})` };
        add({ tool: tool.name, case: sample.name, check: fault, ms: Math.round(performance.now() - started), ...said });
      }
    }
    if (tool.reconcile) for (const sample of samples) add(await checkReconcile(tool, sample, committed.get(sample.name)));
    summary.push({ name: tool.name, ms: Math.round(performance.now() - toolStarted), notes });
  }
  return { cells, tools: summary };
}

/** `reconcile` finds what a key committed, and nothing for a key never sent. */
async function checkReconcile(tool: ToolSpec, sample: VerifyCase, committedKey: string | undefined): Promise<VerifyCell> {
  const started = performance.now();
  const cell = (v: Verdict): VerifyCell => ({
    tool: tool.name,
    case: sample.name,
    check: 'reconcile',
    ms: Math.round(performance.now() - started),
    ...v,
  });
  if (!committedKey)
    return cell({ verdict: 'unverifiable', reason: 'the call without a fault did not succeed, so nothing was committed to look up' });
  const input = tool.inputSchema.parse(sample.input);
  try {
    const found = await tool.reconcile!(probeContext(tool, globalThis.fetch, committedKey), input);
    if (!found.found) return cell({ verdict: 'broken', reason: 'reconcile answered { found: false } for a key whose call succeeded' });
    const never = await tool.reconcile!(probeContext(tool, globalThis.fetch), input);
    if (never.found) return cell({ verdict: 'broken', reason: 'reconcile found an effect for a key never sent' });
    const shape = tool.outputSchema.safeParse(found.result);
    if (!shape.success) return cell({ verdict: 'broken', reason: 'reconcile found a result that does not match outputSchema' });
  } catch (error) {
    return cell({ verdict: 'broken', reason: `reconcile threw: ${(error as Error).message}` });
  }
  return cell({ verdict: 'held' });
}
