import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Agent, run } from '@openai/agents';
import { generateText, type ModelMessage } from 'ai';
import { responseMessages, toolrunnerAiSdk } from 'toolrunner/ai-sdk';
import { createClient, operationIdFor, type Operation, type TraceEvent } from 'toolrunner/client';
import { toolrunnerAgents } from 'toolrunner/openai-agents';
import { lastToolResults, ScriptedAgentsModel, scriptedAiSdkModel, type ScriptedCall } from '../../examples/scripted-models';

/**
 * The approval cases of the framework adapters, written once against the package's own names (`toolrunner/*`,
 * `ai`, `@openai/agents`), so they run in the repo's tests (on the sources, with the oldest and the newest SDKs)
 * and from the packed tarball installed beside the newest published SDKs (test/package). Each case: the model
 * asks for a $700 charge, which the runner holds for a person; a person (or the clock) decides at the runner;
 * the case reports what the model read afterwards, the operation and its trace, and the sandbox's charges.
 */

export type Framework = 'ai-sdk' | 'openai-agents';
/** What happens at the runner while the call waits: an approver approves or rejects, nobody decides, the agent cancels. */
export type Action = 'approve' | 'reject' | 'expire' | 'cancel';
/** `default` budgets, or a spend budget the call itself nearly fills. */
export type BudgetCase = 'default' | 'nearly-full';
/** `pause`: the framework stops, its state is saved and resumed by a fresh adapter; `blocking`: the adapter waits in process. */
export type Mode = 'pause' | 'blocking';

export interface CaseSpec {
  framework: Framework;
  action: Action;
  budget: BudgetCase;
  mode: Mode;
}

export interface CaseEnv {
  apiUrl: string;
  sandboxUrl: string;
  agentKey: string;
  approverKey: string;
  /** Resumes a saved Agents SDK state; by default a fresh adapter and agent in this process (see `resumeAgents`). */
  resumeAgents?: (input: ResumeInput) => Promise<ModelRead>;
}

/** What the model read about the call once the framework went on: its tool result, or the framework's denial. */
export interface ModelRead {
  kind: 'result' | 'denied';
  /** The text (JSON) the model read, parsed. */
  body: unknown;
}

export interface CaseReport {
  spec: CaseSpec;
  runId: string;
  operationId: string;
  /** The framework stopped for approval (an approval request part, an interruption). */
  frameworkPaused: boolean;
  /** The operation when the framework paused: it exists already and waits for its approver. */
  atPause: Pick<Operation, 'state' | 'approval'>;
  modelRead: ModelRead;
  operation: Operation;
  trace: TraceEvent[];
  /** Charges the sandbox committed for this case's customer. */
  charges: number;
}

export interface ResumeInput {
  apiUrl: string;
  agentKey: string;
  runId: string;
  saved: string;
}

export const CHARGE_CENTS = 70_000;
const NEARLY_FULL_BUDGET = { maxSpendCents: CHARGE_CENTS + 500 };
const CALL_ID = 'call_charge';
const INSTRUCTIONS = 'Help customers with their orders.';
const DEADLINE_MS = 60_000;

export const ALL_ACTIONS: readonly Action[] = ['approve', 'reject', 'expire', 'cancel'];
export const ALL_BUDGETS: readonly BudgetCase[] = ['default', 'nearly-full'];

const chargeFor = (customer: string): ScriptedCall[][] => [
  [{ callId: CALL_ID, name: 'charge_card', arguments: { amount: CHARGE_CENTS, currency: 'USD', customer } }],
];

/** Runs one case end to end and reports what happened; `checkCase` says whether it kept the promise. */
export async function runCase(env: CaseEnv, spec: CaseSpec): Promise<CaseReport> {
  const customer = `cus_${spec.framework.replace('-', '')}_${spec.action}_${spec.budget.replace('-', '')}_${spec.mode}_${randomBytes(3).toString('hex')}`;
  const options = {
    baseUrl: env.apiUrl,
    key: env.agentKey,
    pollMs: 200,
    ...(spec.budget === 'nearly-full' ? { budgets: NEARLY_FULL_BUDGET } : {}),
  };
  const agentClient = createClient({ baseUrl: env.apiUrl, apiKey: env.agentKey });
  const atPause: { value?: Operation } = {};
  /** The person (or the clock) at the runner, once the call waits there. */
  const decide = async (operationId: string) => {
    const op = await until(
      'the call to wait for its approver',
      () => agentClient.getOperation(operationId).catch(() => undefined),
      (o) => Boolean(o?.approval),
    );
    atPause.value ??= op;
    await act(env, spec.action, operationId);
  };

  let runId: string;
  let frameworkPaused: boolean;
  let modelRead: ModelRead;
  if (spec.framework === 'ai-sdk') {
    const runner = await toolrunnerAiSdk(options);
    runId = runner.runId;
    const model = scriptedAiSdkModel(chargeFor(customer));
    const messages: ModelMessage[] = [{ role: 'user', content: `Charge customer ${customer} $700.` }];
    const first = await generateText({ model, ...runner.toolSettings, messages });
    frameworkPaused = first.content.some((p) => p.type === 'tool-approval-request');
    const [pending] = await runner.pendingApprovals(first);
    assert.ok(pending, 'the paused call is listed as waiting for a person');
    if (spec.mode === 'blocking') {
      // The adapter waits in process for the decision; the person decides meanwhile.
      const [answer] = await Promise.all([runner.settleApprovals(first), decide(pending.operationId)]);
      await generateText({ model, ...runner.toolSettings, messages: [...messages, ...responseMessages(first), answer!] });
      modelRead = aiSdkModelRead(model);
    } else {
      await decide(pending.operationId);
      // Saved, and resumed by a fresh adapter and model from the saved messages only.
      const saved = JSON.stringify([...messages, ...responseMessages(first)]);
      const resumed = await toolrunnerAiSdk({ ...options, runId });
      const history = JSON.parse(saved) as ModelMessage[];
      const answer = await until('the runner’s decision', () => resumed.approvalResponses(history), Boolean);
      const model2 = scriptedAiSdkModel(chargeFor(customer));
      await generateText({ model: model2, ...resumed.toolSettings, messages: [...history, answer!] });
      modelRead = aiSdkModelRead(model2);
    }
  } else {
    const runner = await toolrunnerAgents(options);
    runId = runner.runId;
    const model = new ScriptedAgentsModel(chargeFor(customer));
    const agent = new Agent({ name: 'support', instructions: INSTRUCTIONS, model, tools: runner.tools });
    const first = await run(agent, `Charge customer ${customer} $700.`);
    frameworkPaused = first.interruptions.length === 1;
    const [pending] = await runner.pendingApprovals(first);
    assert.ok(pending, 'the interrupted call is listed as waiting for a person');
    if (spec.mode === 'blocking') {
      await Promise.all([runner.settleApprovals(first), decide(pending.operationId)]);
      const approved = approvedInState(first.state);
      await run(agent, first.state);
      modelRead = agentsModelRead(model, approved);
    } else {
      await decide(pending.operationId);
      const saved = first.state.toString();
      modelRead = await (env.resumeAgents ?? resumeAgents)({ apiUrl: env.apiUrl, agentKey: env.agentKey, runId, saved });
    }
  }

  const operationId = operationIdFor(runId, CALL_ID);
  const operation = await until(
    'the operation’s envelope',
    () => agentClient.getOperation(operationId),
    (o) => Boolean(o.envelope),
  );
  const trace = (await agentClient.getTrace(runId)).filter((e) => e.operationId === operationId);
  const ledger = (await (await fetch(`${env.sandboxUrl}/_sandbox/ledger`)).json()) as { kind: string; body: { customer?: string } }[];
  const charges = ledger.filter((e) => e.kind === 'charge' && e.body.customer === customer).length;
  assert.ok(atPause.value, 'the call waited at the runner');
  return {
    spec,
    runId,
    operationId,
    frameworkPaused,
    atPause: { state: atPause.value.state, approval: atPause.value.approval },
    modelRead,
    operation,
    trace,
    charges,
  };
}

/**
 * Resumes a saved Agents SDK run with nothing but the string: a fresh adapter on the same run, a fresh agent
 * and model; waits until the runner's decision is there, then runs to the end. What the model read.
 */
export async function resumeAgents(input: ResumeInput): Promise<ModelRead> {
  const runner = await toolrunnerAgents({ baseUrl: input.apiUrl, key: input.agentKey, runId: input.runId, pollMs: 200 });
  const model = new ScriptedAgentsModel(chargeFor('resumed'));
  const agent = new Agent({ name: 'support', instructions: INSTRUCTIONS, model, tools: runner.tools });
  const restored = await until(
    'the runner’s decision',
    () => runner.restore(agent, input.saved),
    (r) => r.pending.length === 0,
  );
  const approved = approvedInState(restored.state);
  await run(agent, restored.state);
  return agentsModelRead(model, approved);
}

/** Whether the SDK's state holds the charge as approved (it runs the tool) or rejected (it never does). */
function approvedInState(state: { _context: { isToolApproved(approval: { toolName: string; callId: string }): boolean | undefined } }) {
  return state._context.isToolApproved({ toolName: 'charge_card', callId: CALL_ID });
}

/** What the AI SDK's model read last about the charge: a tool result (JSON output) or `execution-denied` with the runner's reason. */
function aiSdkModelRead(model: ReturnType<typeof scriptedAiSdkModel>): ModelRead {
  const prompt = model.doGenerateCalls.at(-1)?.prompt ?? [];
  const part = lastToolResults(prompt).find((p) => p.toolCallId === CALL_ID);
  assert.ok(part, 'the model read a result for the charge');
  const output = part.output as { type: string; value?: unknown; reason?: string };
  if (output.type === 'execution-denied') return { kind: 'denied', body: parsedOrText(output.reason ?? '') };
  return { kind: 'result', body: output.value };
}

/** What the Agents SDK's model read last about the charge; denied when the SDK's state rejected the call instead of running the tool. */
function agentsModelRead(model: ScriptedAgentsModel, approved: boolean | undefined): ModelRead {
  const input = model.requests.at(-1)?.input;
  const result = (typeof input === 'string' ? [] : (input ?? [])).find((i) => i.type === 'function_call_result' && i.callId === CALL_ID) as
    | { output: string | { type: string; text: string } }
    | undefined;
  assert.ok(result, 'the model read a result for the charge');
  const text = typeof result.output === 'string' ? result.output : result.output.text;
  assert.notEqual(approved, undefined, 'the SDK holds a decision for the charge');
  return { kind: approved ? 'result' : 'denied', body: parsedOrText(text) };
}

/** The runner's answers are JSON; anything else the framework made up is kept as its text. */
function parsedOrText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** What each action is at the runner. */
async function act(env: CaseEnv, action: Action, operationId: string): Promise<void> {
  const approver = createClient({ baseUrl: env.apiUrl, apiKey: env.approverKey });
  if (action === 'approve') await approver.approve(operationId, { reason: 'known customer' });
  else if (action === 'reject') await approver.reject(operationId, { reason: 'not this amount' });
  else if (action === 'cancel') await createClient({ baseUrl: env.apiUrl, apiKey: env.agentKey }).cancelOperation(operationId);
  // expire: nobody decides; the runner's approval time (kept short for these cases) runs out.
}

/**
 * The promise the adapters keep, checked on a report: the model read exactly the operation's envelope; an
 * executed call is never reported as denied, and a call nobody approved never ran; the trace says the same.
 */
export function checkCase(report: CaseReport): void {
  const { spec, modelRead, operation, trace } = report;
  const name = `${spec.framework} ${spec.mode} ${spec.action} (${spec.budget} budget)`;
  assert.equal(report.frameworkPaused, true, `${name}: the framework paused for approval`);
  assert.equal(report.atPause.state, 'awaiting_approval', `${name}: at the pause the call waits at the runner`);
  assert.deepEqual(modelRead.body, JSON.parse(JSON.stringify(operation.envelope)), `${name}: the model read the operation's envelope`);
  const types = trace.map((e) => e.type);
  const attempts = types.filter((t) => t === 'attempt.started').length;
  const reported = trace.filter((e) => e.type === 'result.reported').map((e) => e.detail?.status);
  assert.deepEqual(reported, [operation.envelope?.status], `${name}: the trace reported the envelope the model read, once`);
  if (attempts > 0) assert.equal(modelRead.kind, 'result', `${name}: an executed call is never reported as denied`);
  const decided = trace.find((e) => e.type === 'approval.decided')?.detail?.decision;
  const expected = {
    approve: { kind: 'result', status: 'succeeded', code: undefined, decided: 'approve', attempts: 1, charges: 1 },
    reject: { kind: 'denied', status: 'rejected', code: 'approval_rejected', decided: 'reject', attempts: 0, charges: 0 },
    expire: { kind: 'denied', status: 'rejected', code: 'approval_expired', decided: 'expired', attempts: 0, charges: 0 },
    cancel: { kind: 'denied', status: 'cancelled', code: 'cancelled', decided: undefined, attempts: 0, charges: 0 },
  }[spec.action];
  assert.deepEqual(
    {
      kind: modelRead.kind,
      status: operation.envelope?.status,
      code: operation.envelope?.code,
      decided,
      attempts,
      charges: report.charges,
    },
    expected,
    `${name}: what the model read, the trace and the ledger agree`,
  );
}

/** One line per case: what the model read. */
export function describeRead(report: CaseReport): string {
  const body = report.modelRead.body as { status?: string; code?: string; result?: { amount?: number } };
  const what = [body.status, body.code, body.result?.amount !== undefined ? `amount ${body.result.amount}` : undefined].filter(Boolean);
  return `${report.spec.framework.padEnd(13)} ${report.spec.mode.padEnd(8)} ${report.spec.budget.padEnd(11)} ${report.spec.action.padEnd(7)} → ${report.modelRead.kind}: ${what.join(', ')}`;
}

async function until<T>(what: string, read: () => Promise<T>, ok: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + DEADLINE_MS;
  for (let pause = 50; ; pause = Math.min(pause * 2, 500)) {
    const value = await read();
    if (ok(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, pause));
  }
}
