import type { Envelope } from '../core/envelope';
import type { Risk } from '../core/model';

/** What verify saw of one case under one fault. */
export interface Observation {
  tool: { name: string; risk: Risk; supportsIdempotency: boolean; hasReconcile: boolean };
  fault: string;
  status: Envelope['status'];
  /** Effects the case made upstream; undefined when nothing can count them (no reconcile, no `verify.effects`). */
  effects: number | undefined;
  /** Requests the tool's `execute` made through `ctx.fetch` (or `requestJson`). */
  executeRequests: number;
  /** Methods of those requests (a read must not write). */
  methods: string[];
  /** Answers of `execute` that broke `outputSchema`, as the schema said. */
  outputProblems: string[];
  /** How long after `timeoutMs` the tool's `execute` still ran (slow answers only). */
  overranMs?: number;
}

export type Verdict = { verdict: 'held' } | { verdict: 'broken' | 'unverifiable'; reason: string };

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
/** How long past `timeoutMs` a tool may take to stop after its signal fires. */
export const STOP_ALLOWANCE_MS = 250;

/**
 * Whether a case held: effects at most 1 always; exactly 1 when the call succeeded; 0 when it failed or was
 * rejected; an unknown outcome left for a person only for a tool without `reconcile`. Then the declared
 * contract: answers match `outputSchema`, the tool stops at `timeoutMs`, a read writes nothing.
 */
export function judge(o: Observation): Verdict {
  if (o.executeRequests === 0)
    return { verdict: 'unverifiable', reason: 'execute made no request through ctx.fetch or requestJson, so no fault could reach it' };
  if (o.tool.risk !== 'read' && o.effects === undefined)
    return { verdict: 'unverifiable', reason: 'nothing counts its effects: declare reconcile or verify.effects' };
  const effects = o.effects ?? 0;
  if (effects > 1) {
    if (o.tool.supportsIdempotency)
      return {
        verdict: 'broken',
        reason: `the upstream ignores the idempotency key: ${effects} effects for one call whose requests all carried the same key`,
      };
    return { verdict: 'broken', reason: `${effects} effects for one call: the runner sent it more than once` };
  }
  if (o.tool.risk === 'read') {
    if (effects > 0) return { verdict: 'broken', reason: `a read made ${effects} effect upstream` };
    const writing = o.methods.find((m) => !SAFE_METHODS.has(m));
    if (writing) return { verdict: 'broken', reason: `a read sent a ${writing} request` };
  } else if (o.status === 'succeeded' && effects !== 1) {
    return { verdict: 'broken', reason: 'the envelope says succeeded but the upstream holds no effect' };
  } else if ((o.status === 'failed' || o.status === 'rejected') && effects !== 0) {
    return { verdict: 'broken', reason: `the envelope says ${o.status} but the upstream holds the effect` };
  }
  if (o.status === 'outcome_unknown' && o.tool.hasReconcile)
    return { verdict: 'broken', reason: 'the outcome was left to a person although the tool has reconcile to look it up' };
  if (o.outputProblems.length) return { verdict: 'broken', reason: `an answer does not match outputSchema: ${o.outputProblems[0]}` };
  if (o.overranMs !== undefined && o.overranMs > STOP_ALLOWANCE_MS)
    return { verdict: 'broken', reason: `execute ran ${o.overranMs} ms past timeoutMs: it ignores ctx.signal` };
  return { verdict: 'held' };
}
