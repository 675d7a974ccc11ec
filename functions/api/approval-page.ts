import type { OperationRecord } from '../core/model';

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Everything that comes from arguments or records goes through here before it reaches HTML. */
export function escapeHtml(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (ch) => ESCAPES[ch]);
}

function layout(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer"><title>${escapeHtml(title)}</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:44rem;margin:2rem auto;padding:0 1rem;color:#111}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem}dt{font-weight:600}dd{margin:0;overflow-wrap:anywhere}
pre{background:#f4f4f4;padding:.75rem;overflow:auto;white-space:pre-wrap;word-break:break-all}
button{font-size:1rem;padding:.5rem 1.25rem;margin-right:.5rem}.approve{background:#0a7d32;color:#fff;border:0}
.reject{background:#b3261e;color:#fff;border:0}.risk{font-weight:700;color:#b3261e}</style></head>
<body>${body}</body></html>`;
}

/** The approval page: shows the exact frozen operation; decides nothing on GET; works without JavaScript. */
export function approvalPage(op: OperationRecord, approverId: string, sig: string, action: string): string {
  const args = op.frozenArguments ? JSON.stringify(JSON.parse(op.frozenArguments), null, 2) : '';
  const approval = op.approval!;
  const pending = op.state === 'awaiting_approval' && approval.state === 'pending';
  const form = pending
    ? `<form method="post" action="${escapeHtml(action)}">
<input type="hidden" name="sig" value="${escapeHtml(sig)}">
<p><label>Reason (optional)<br><input type="text" name="reason" maxlength="500" size="50"></label></p>
<button class="approve" type="submit" name="decision" value="approve">Approve</button>
<button class="reject" type="submit" name="decision" value="reject">Reject</button>
</form>`
    : `<p><strong>${approval.state === 'pending' ? `This operation is ${escapeHtml(op.state)}` : `This approval is ${escapeHtml(approval.state)}`}.</strong> Nothing more to decide.</p>`;
  return layout(
    `Approve ${op.toolName}?`,
    `<h1>Approve <code>${escapeHtml(op.toolName)}</code>?</h1>
<dl>
<dt>Tool</dt><dd><code>${escapeHtml(op.toolName)}</code></dd>
<dt>Risk</dt><dd class="risk">${escapeHtml(op.risk ?? 'unknown')}</dd>
<dt>Requested by</dt><dd>${escapeHtml(op.principalId)}</dd>
<dt>Run</dt><dd><code>${escapeHtml(op.runId)}</code></dd>
<dt>Operation</dt><dd><code>${escapeHtml(op.operationId)}</code></dd>
<dt>Expires</dt><dd><time datetime="${escapeHtml(approval.expiresAt)}">${escapeHtml(approval.expiresAt)}</time></dd>
<dt>You are</dt><dd>${escapeHtml(approverId)}</dd>
<dt>Arguments hash</dt><dd><code>${escapeHtml(op.inputHash)}</code></dd>
</dl>
<h2>Exact arguments</h2>
<pre id="arguments">${escapeHtml(args)}</pre>
${form}`,
  );
}

export function decisionPage(title: string, message: string): string {
  return layout(title, `<h1>${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p>`);
}
