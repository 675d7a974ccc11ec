/** Where things are, on one screen, printed just before the `ready:` line (whose format stays as it is). */
export function startSummary(where: {
  apiUrl: string;
  sandboxUrl?: string;
  dataDir: string;
  configPath: string;
  createdKeys: boolean;
}): string[] {
  const { apiUrl } = where;
  return [
    '',
    'toolrunner is up:',
    `  API          ${apiUrl}   (bearer keys; health: ${apiUrl}/v1/health)`,
    ...(where.sandboxUrl ? [`  sandbox      ${where.sandboxUrl}   (demo upstreams; ledger: ${where.sandboxUrl}/_sandbox/ledger)`] : []),
    `  data         ${where.dataDir}`,
    `  keys         ${where.configPath}${where.createdKeys ? '   (created with random keys)' : ''}`,
    `  trace JSON   ${apiUrl}/v1/runs/RUN_ID/trace`,
    `  trace page   ${apiUrl}/v1/runs/RUN_ID/timeline   (send the owner's or an admin's key:`,
    `               curl -H 'Authorization: Bearer KEY' ${apiUrl}/v1/runs/RUN_ID/timeline > trace.html)`,
    `  approvals    ${apiUrl}/v1/approvals?status=pending   (approver key)`,
    `  metrics      ${apiUrl}/v1/metrics   (admin key)`,
    '',
  ];
}
