import { argumentsHash, previewCall } from '../core/call-policy';
import { parseArguments } from '../core/canonical';
import type { Principal, RunRecord } from '../core/model';
import { decidingPrincipal } from '../core/policy';
import type { Deps } from '../core/ports';
import { toolsReady } from '../tools/mcp-upstream';
import { checkCallArguments } from '../commands/argument-check';
import type { PreviewSchema } from '../http/schemas';
import type { z } from 'zod';

/**
 * `POST /v1/runs/{runId}/tool-calls/preview`: the policy decision submission would take for this call,
 * from the same pure function, with no operation, no attempt and no budget used.
 */
export async function previewToolCall(
  deps: Pick<Deps, 'config' | 'tools' | 'policies' | 'now' | 'toolDirectory'>,
  run: RunRecord,
  caller: Principal,
  body: z.infer<typeof PreviewSchema>,
) {
  const [config] = await Promise.all([deps.config(), toolsReady(deps.tools)]);
  const policy = await deps.policies?.(config);
  const parsed = parseArguments(body.arguments);
  const inputHash = argumentsHash(parsed, body.arguments);
  const tool = deps.tools.get(body.name);
  // The caller is the principal submission checks (an admin may submit into another principal's run), as
  // submission decides with it: a token principal as it authenticated.
  const principal = decidingPrincipal(config, caller.id, caller);
  const decision = previewCall({
    tool,
    toolName: body.name,
    principal,
    // The same question submission asks the tool's code, so both decide alike.
    checked: await checkCallArguments(deps, tool, principal, parsed),
    arguments: parsed,
    approvalTtlSeconds: config.approvalTtlSeconds,
    policy,
    run,
    now: deps.now(),
    turn: body.turn ?? Math.max(run.lastTurn, 1),
  });
  return {
    decision: decision.decision,
    ...(decision.decision === 'deny' ? { code: decision.code } : {}),
    message: decision.message,
    ...(decision.policies ? { policies: decision.policies } : {}),
    inputHash,
  };
}
