import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { createClient, ToolRunnerError, type Approval, type RunsPage } from '../functions/client';
import { argumentLine, argumentsForApprover, type ArgumentField } from '../functions/core/approval-view';
import { formatCents } from '../functions/core/format';

/**
 * The commands a person runs against a stack from a terminal: pending approvals, a decision, the runs, a
 * principal's key. They act through the HTTP API with a key (TOOLRUNNER_KEY, or a principal's from the keys
 * file `toolrunner start` created), under the same rules as the console; they never touch the tables.
 */

/** A refusal with its exit code (1 failed, 2 a usage error); main.ts prints it as one line. */
export class CliFailure extends Error {
  override name = 'CliFailure';
  constructor(
    message: string,
    readonly code: 1 | 2,
  ) {
    super(message);
  }
}

export interface PeopleIo {
  out(text: string): void;
  env: Record<string, string | undefined>;
}

/** What of the keys file these commands read: ids, keys (or only their hashes) and roles. */
const KeysFile = z.looseObject({
  principals: z.array(
    z.looseObject({
      id: z.string(),
      key: z.string().optional(),
      keySha256: z.string().optional(),
      oauthSubject: z.string().optional(),
      roles: z.array(z.string()).default([]),
    }),
  ),
});
type FilePrincipal = z.infer<typeof KeysFile>['principals'][number];

function keysFilePath(env: PeopleIo['env']): string {
  return env.TOOLRUNNER_CONFIG || 'toolrunner.local.json';
}

function readKeysFile(env: PeopleIo['env']): FilePrincipal[] {
  const path = keysFilePath(env);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new CliFailure(`cannot read the keys file ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`, 1);
  }
  let parsed: ReturnType<typeof KeysFile.safeParse>;
  try {
    parsed = KeysFile.safeParse(JSON.parse(text));
  } catch {
    throw new CliFailure(`the keys file ${path} is not JSON`, 1);
  }
  if (!parsed.success) throw new CliFailure(`the keys file ${path} has no principals list`, 1);
  return parsed.data.principals;
}

/** A principal's key from the keys file; a principal with only a hash (or none) cannot be acted as from here. */
function keyOf(principals: FilePrincipal[], id: string, path: string): string {
  const principal = principals.find((p) => p.id === id);
  if (!principal) throw new CliFailure(`no principal ${id} in ${path} (there: ${principals.map((p) => p.id).join(', ') || 'none'})`, 2);
  if (principal.key) return principal.key;
  if (principal.keySha256)
    throw new CliFailure(`${id} has only a keySha256 in ${path}: the key itself is not kept there, so it cannot be shown`, 1);
  throw new CliFailure(`${id} has no key in ${path} (it signs in with a token)`, 1);
}

/**
 * The key a command acts with: `--as ID`'s from the keys file, else TOOLRUNNER_KEY, else the keys file's first
 * principal holding one of `roles` (in that order of preference) with a key of its own.
 */
function keyFor(io: PeopleIo, as: string | undefined, roles: readonly string[]): string {
  const path = keysFilePath(io.env);
  if (as !== undefined) return keyOf(readKeysFile(io.env), as, path);
  if (io.env.TOOLRUNNER_KEY) return io.env.TOOLRUNNER_KEY;
  let principals: FilePrincipal[];
  try {
    principals = readKeysFile(io.env);
  } catch (error) {
    throw new CliFailure(`no key: set TOOLRUNNER_KEY, or pass --as PRINCIPAL where ${path} is (${(error as Error).message})`, 2);
  }
  for (const role of roles) {
    const found = principals.find((p) => p.key && p.roles.includes(role));
    if (found?.key) return found.key;
  }
  throw new CliFailure(`no principal with a key and the role ${roles.join(' or ')} in ${path}: set TOOLRUNNER_KEY or pass --as`, 2);
}

function clientFor(io: PeopleIo, key: string) {
  return createClient({ baseUrl: io.env.TOOLRUNNER_URL || 'http://127.0.0.1:3000', apiKey: key });
}

/** The API's refusal as one line (`forbidden: ...`), exit 1. */
async function throughApi<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof ToolRunnerError) throw new CliFailure(`${error.code}: ${error.message}`, 1);
    throw error;
  }
}

/** `toolrunner keys show PRINCIPAL`: the principal's key, alone on its line. */
export function showKey(io: PeopleIo, id: string): void {
  io.out(`${keyOf(readKeysFile(io.env), id, keysFilePath(io.env))}\n`);
}

/** An approval's arguments as lines: the API's view (secret fields masked) where it gave one. */
function fieldsOf(approval: Approval): ArgumentField[] {
  if (approval.argumentFields) return approval.argumentFields as ArgumentField[];
  // An API without the view: card-like numbers are still masked here; the tool's secret fields are unknown.
  return approval.arguments === undefined ? [] : argumentsForApprover(approval.arguments);
}

/** One approval as a person reads it in a terminal. */
export function formatApproval(a: Approval): string {
  const lines = [
    `${a.operationId}  ${a.toolName}  requested by ${a.requestedBy}  run ${a.runId}  expires ${a.expiresAt}`,
    ...(a.summary ?? []).map((line) => `  ${line}`),
    '  arguments:',
    ...fieldsOf(a).map((field) => `    ${argumentLine(field)}`),
    `  arguments hash ${a.inputHash}`,
  ];
  return `${lines.join('\n')}\n`;
}

/** `toolrunner approvals`: what waits for this approver, oldest first. */
export async function listApprovals(io: PeopleIo, options: { as?: string; json?: boolean }): Promise<void> {
  const client = clientFor(io, keyFor(io, options.as, ['approver', 'admin']));
  const approvals = await throughApi(() => client.listApprovals());
  // As a person reads them here too: the raw arguments only where the API gave no masked view of them.
  if (options.json)
    return io.out(
      `${JSON.stringify(
        approvals.map(({ arguments: raw, ...a }) => (a.argumentFields ? a : { ...a, arguments: raw })),
        null,
        2,
      )}\n`,
    );
  if (approvals.length === 0) return io.out('Nothing waits for your approval.\n');
  io.out(approvals.map(formatApproval).join('\n'));
  io.out(`\n${approvals.length} waiting; decide with toolrunner approve|reject OPERATION_ID [--reason TEXT]\n`);
}

/** `toolrunner approve|reject OPERATION_ID`: the same decision as the console's, as the key's principal. */
export async function decide(
  io: PeopleIo,
  decision: 'approve' | 'reject',
  operationId: string,
  options: { as?: string; reason?: string },
): Promise<void> {
  if (!/^op_[A-Za-z0-9]+$/.test(operationId)) throw new CliFailure(`${operationId} is not an operation id (op_...)`, 2);
  if (options.reason !== undefined && options.reason.length > 500) throw new CliFailure('--reason is at most 500 characters', 2);
  const client = clientFor(io, keyFor(io, options.as, ['approver', 'admin']));
  const reason = options.reason ? { reason: options.reason } : {};
  const result = await throughApi(() =>
    decision === 'approve' ? client.approve(operationId, reason) : client.reject(operationId, reason),
  );
  io.out(`${decision === 'approve' ? 'Approved' : 'Rejected'} ${result.operationId} (approval ${result.approvalId}: ${result.state}).\n`);
}

export const RUN_STATUSES = ['open', 'cancelled', 'budget_exhausted', 'expired'] as const;

/** One page of runs as a table. */
export function formatRuns(page: RunsPage): string {
  const rows = [
    ['RUN', 'STATUS', 'OWNER', 'CREATED', 'CALLS', 'SPEND'],
    ...page.runs.map((r) => [r.runId, r.status, r.owner, r.createdAt, String(r.usage.toolCalls), formatCents(r.usage.spendCents)]),
  ];
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => row[i].length)));
  return `${rows
    .map((row) =>
      row
        .map((cell, i) => cell.padEnd(widths[i]))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')}\n`;
}

/** `toolrunner runs`: runs newest first (every run for a reviewer or admin; an agent's own). */
export async function listRuns(io: PeopleIo, options: { as?: string; status?: string; limit?: string; cursor?: string }): Promise<void> {
  const status = options.status;
  if (status !== undefined && !(RUN_STATUSES as readonly string[]).includes(status))
    throw new CliFailure(`--status must be one of ${RUN_STATUSES.join(', ')}`, 2);
  const limit = options.limit === undefined ? undefined : Number(options.limit);
  if (limit !== undefined && !(Number.isInteger(limit) && limit >= 1 && limit <= 100))
    throw new CliFailure('--limit must be an integer from 1 to 100', 2);
  const client = clientFor(io, keyFor(io, options.as, ['reviewer', 'admin', 'agent']));
  const page = await throughApi(() =>
    client.listRuns({ status: status as (typeof RUN_STATUSES)[number] | undefined, limit, cursor: options.cursor }),
  );
  if (page.runs.length === 0) io.out('No runs.\n');
  else io.out(formatRuns(page));
  if (page.nextCursor) io.out(`more: toolrunner runs --cursor ${page.nextCursor}\n`);
}
