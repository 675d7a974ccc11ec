import type { OperationRecord, PolicyIds, Risk } from '../core/model';
import type { ToolSpec } from '../core/tool-spec';
import { ARGUMENT_LIST_STYLE, argumentList } from './argument-list';
import { INVISIBLE_STYLE } from './page-basics';
import { html, type SafeHtml, visible } from './safe-html';

/** What each risk class means, in words (the approval page and the console). */
export const RISK_TEXT: Record<Risk, string> = {
  read: 'reads data; changes nothing',
  reversible_write: 'changes data in a way that can be undone',
  irreversible_write: 'has an effect that cannot be undone',
};

/** Why a person is asked: the configured policies (where they decided) or the tool's approval policy, in words. */
function approvalReason(tool: ToolSpec | undefined, policies: PolicyIds | undefined): string {
  // The unattended action is asked only where the tool itself did not require a person.
  if (policies?.unattended)
    return policies.unattended.length > 0
      ? `The policies forbid running this call without a person (${quoteIds(policies.unattended)}).`
      : 'No policy lets this call run without a person.';
  if (!tool) return 'This tool is no longer registered; its policy asked for approval when the call was made.';
  if (tool.approval === 'always') return 'The policy of this tool asks a person to approve every call.';
  return 'A rule in the policy of this tool asks a person to approve a call with these arguments.';
}

function quoteIds(ids: readonly string[]): string {
  return ids.map((id) => `"${id}"`).join(', ');
}

/** The determining policy ids of a call in words (the approval page and the console): which permitted it, which asked for a person. */
export function policiesLine(policies: PolicyIds): string {
  const call = policies.call.length > 0 ? `call permitted by ${quoteIds(policies.call)}` : 'call permitted by no policy';
  if (!policies.unattended) return call;
  return `${call}; unattended ${policies.unattended.length > 0 ? `decided by ${quoteIds(policies.unattended)}` : 'permitted by no policy'}`;
}

/**
 * The tool's own summary for people (`describeForApproval`: amounts in their currency), if it has one: the
 * lines its code gave at validation (`stored`); an operation validated before they were kept asks the hook here,
 * and a failing hook must not take the page down. The approval page and the console show the same lines.
 */
export function summaryLines(tool: ToolSpec | undefined, args: unknown, stored?: string[]): string[] {
  if (stored) return stored;
  if (!tool?.describeForApproval) return [];
  try {
    const parsed = tool.inputSchema.safeParse(args);
    return parsed.success ? tool.describeForApproval(parsed.data).map(String) : [];
  } catch {
    return [];
  }
}

function layout(title: string, body: SafeHtml): string {
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer"><title>${title}</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:44rem;margin:2rem auto;padding:0 1rem;color:#111}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem}dt{font-weight:600}dd{margin:0;overflow-wrap:anywhere}
pre{background:#f4f4f4;padding:.75rem;overflow:auto;white-space:pre-wrap;word-break:break-all}
button{font-size:1rem;padding:.5rem 1.25rem;margin-right:.5rem}.approve{background:#0a7d32;color:#fff;border:0}
.reject{background:#b3261e;color:#fff;border:0}.risk{font-weight:700;color:#b3261e}.muted{color:#64748b}
${ARGUMENT_LIST_STYLE}${INVISIBLE_STYLE}</style></head>
<body>${body}</body></html>`.toString();
}

/** The approval page: shows the exact frozen operation; decides nothing on GET; works without JavaScript. */
export function approvalPage(op: OperationRecord, approverId: string, sig: string, action: string, tool?: ToolSpec): string {
  const parsedArgs: unknown = op.frozenArguments ? JSON.parse(op.frozenArguments) : undefined;
  const approval = op.approval!;
  const pending = op.state === 'awaiting_approval' && approval.state === 'pending';
  const risk = op.risk ?? tool?.risk;
  const summary = summaryLines(tool, parsedArgs, op.approvalLines);
  const decided =
    approval.decidedBy || approval.decidedAt
      ? html`<p id="decision">Decided (${visible(approval.state)}) by <strong>${visible(approval.decidedBy ?? 'unknown')}</strong> at <time datetime="${approval.decidedAt ?? ''}">${visible(approval.decidedAt ?? 'an unknown time')}</time>.</p>`
      : '';
  const form = pending
    ? html`<form method="post" action="${action}">
<input type="hidden" name="sig" value="${sig}">
<p><label>Reason (optional)<br><input type="text" name="reason" maxlength="500" size="50"></label></p>
<button class="approve" type="submit" name="decision" value="approve">Approve</button>
<button class="reject" type="submit" name="decision" value="reject">Reject</button>
</form>`
    : html`<p><strong>${approval.state === 'pending' ? html`This operation is ${visible(op.state)}` : html`This approval is ${visible(approval.state)}`}.</strong> Nothing more to decide.</p>${decided}`;
  return layout(
    `Approve ${op.toolName}?`,
    html`<h1>Approve <code>${visible(op.toolName)}</code>?</h1>
${summary.length ? html`<ul id="summary">${summary.map((line) => html`<li>${visible(line)}</li>`)}</ul>` : ''}
<h2>Why you are asked</h2>
<p id="reason">${visible(approvalReason(tool, op.policies))} Risk: <span class="risk">${visible(risk ?? 'unknown')}</span>${risk && risk in RISK_TEXT ? html` (${RISK_TEXT[risk as Risk]})` : ''}.</p>
<dl>
<dt>Tool</dt><dd><code>${visible(op.toolName)}</code></dd>
<dt>Risk</dt><dd class="risk">${visible(risk ?? 'unknown')}</dd>
${op.policies ? html`<dt>Policies</dt><dd id="policies">${visible(policiesLine(op.policies))}</dd>\n` : ''}<dt>Requested by</dt><dd>${visible(op.principalId)}</dd>
<dt>Run</dt><dd><code>${visible(op.runId)}</code></dd>
<dt>Operation</dt><dd><code>${visible(op.operationId)}</code></dd>
<dt>Expires</dt><dd><time datetime="${approval.expiresAt}">${visible(approval.expiresAt)}</time></dd>
<dt>You are</dt><dd>${visible(approverId)}</dd>
<dt>Arguments hash</dt><dd><code>${visible(op.inputHash)}</code></dd>
</dl>
${argumentList(parsedArgs, op.secretFields ?? tool?.secretFields, { level: 'h2', id: 'arguments' })}
${form}`,
  );
}

export function decisionPage(title: string, message: string): string {
  return layout(title, html`<h1>${visible(title)}</h1><p>${visible(message)}</p>`);
}
