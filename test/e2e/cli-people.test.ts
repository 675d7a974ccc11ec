import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import tools from '../fixtures/approver-view-tools';
import { startTestStack, type TestStack } from '../support/stack';
import { isEmbedded } from '../support/target';

/**
 * The commands for people against the embedded stack, as a person runs them: `toolrunner approvals`,
 * `approve|reject`, `runs` and `keys show`, with the keys taken from the stack's own keys file (as
 * `toolrunner.local.json` is read) and every decision made through the HTTP API.
 */
const root = resolve(import.meta.dirname, '../..');
const tsxLoader = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

let stack: TestStack;

function cli(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((r) => {
    execFile(
      process.execPath,
      ['--import', tsxLoader, join(root, 'cli/main.ts'), ...args],
      {
        cwd: root,
        env: { ...process.env, TOOLRUNNER_KEY: '', TOOLRUNNER_URL: stack.apiUrl, TOOLRUNNER_CONFIG: stack.configPath, ...env },
      },
      (error, stdout, stderr) => r({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

const noStack = (text: string) => expect(text).not.toMatch(/\n\s+at /);
const args = (email: string) => ({
  email,
  password: 'correct horse battery staple',
  card: '4242 4242 4242 4242',
  device: { name: 'phone', pin: '2468' },
  note: 'n'.repeat(300),
});

beforeAll(async () => {
  stack = await startTestStack({ tools });
}, 300_000);
afterAll(async () => stack?.stop());

describe.runIf(isEmbedded)('toolrunner approvals, approve, reject, runs and keys show', () => {
  it('lists what waits with its arguments masked, decides through the API once, and says why it refuses', async () => {
    const { api, keys } = stack;
    const empty = await cli(['approvals']);
    expect(empty).toMatchObject({ code: 0, stdout: 'Nothing waits for your approval.\n' });

    const runId = await api.createRun(keys.agent);
    const first = await api.call(keys.agent, runId, { callId: 'call_1', name: 'open_account', arguments: args('ann@example.com') });
    const second = await api.call(keys.agent, runId, { callId: 'call_2', name: 'open_account', arguments: args('bob@example.com') });
    expect([first.body.state, second.body.state]).toEqual(['awaiting_approval', 'awaiting_approval']);
    const [op1, op2] = [first.body.operationId as string, second.body.operationId as string];
    const { inputHash } = await api.operation(keys.agent, op1);

    const listed = await cli(['approvals']);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain(`${op1}  open_account  requested by agent  run ${runId}  expires `);
    expect(listed.stdout).toContain(`${op2}  open_account`);
    expect(listed.stdout).toContain('  Open an account for ann@example.com\n');
    expect(listed.stdout).toContain('    password: ••••\n');
    expect(listed.stdout).toContain('    device.pin: ••••\n');
    expect(listed.stdout).toContain('    card: ••••4242\n');
    expect(listed.stdout).toContain(`    note: ${'n'.repeat(200)}… (300 bytes)\n`);
    expect(listed.stdout).toContain(`  arguments hash ${inputHash}\n`);
    expect(listed.stdout).toContain('2 waiting;');
    expect(listed.stdout).not.toMatch(/correct horse|2468|4242 4242/);
    const json = await cli(['approvals', '--json']);
    expect(json.code).toBe(0);
    expect((JSON.parse(json.stdout) as { operationId: string; argumentFields: unknown[] }[]).map((a) => a.operationId).sort()).toEqual(
      [op1, op2].sort(),
    );
    expect(json.stdout).not.toMatch(/correct horse|2468|4242 4242/);

    // Refusals: the requester cannot decide (the API's code), a bad id or flag is a usage error.
    const [asAgent, badId, unknownFlag, missing] = await Promise.all([
      cli(['approve', op1, '--as', 'agent']),
      cli(['approve', 'order-1']),
      cli(['approve', op1, '--because', 'x']),
      cli(['reject', 'op_doesnotexist1']),
    ]);
    expect(asAgent.code).toBe(1);
    expect(asAgent.stderr).toMatch(/^toolrunner: forbidden: /);
    expect(badId).toMatchObject({ code: 2 });
    expect(badId.stderr).toContain('order-1 is not an operation id');
    expect(unknownFlag.code).toBe(2);
    expect(unknownFlag.stderr).toContain('usage: toolrunner approve OPERATION_ID');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^toolrunner: not_found: /);
    noStack(`${asAgent.stderr}${badId.stderr}${unknownFlag.stderr}${missing.stderr}`);

    const approved = await cli(['approve', op1, '--reason', 'confirmed by phone']);
    expect(approved).toMatchObject({ code: 0, stdout: `Approved ${op1} (approval apr_${op1.slice(3)}: approved).\n` });
    const again = await cli(['approve', op1]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/^toolrunner: invalid_state: /);
    const rejected = await cli(['reject', op2, '--as', 'admin']);
    expect(rejected).toMatchObject({ code: 0, stdout: `Rejected ${op2} (approval apr_${op2.slice(3)}: rejected).\n` });

    const done = await api.until(
      'the approved call to succeed',
      () => api.operation(keys.agent, op1),
      (op) => op.state === 'reported',
    );
    expect(done.approval).toMatchObject({ state: 'approved', decidedBy: 'approver' });
    const decided = (await api.trace(keys.agent, runId)).find((e) => e.type === 'approval.decided' && e.operationId === op1);
    expect(decided?.detail).toMatchObject({ decision: 'approve', approverId: 'approver', reason: 'confirmed by phone' });
    expect((await api.operation(keys.agent, op2)).approval).toMatchObject({ state: 'rejected', decidedBy: 'admin' });
    expect(await cli(['approvals'])).toMatchObject({ code: 0, stdout: 'Nothing waits for your approval.\n' });

    // Runs, as the keys file's reviewer sees them.
    const [runs, badStatus] = await Promise.all([cli(['runs']), cli(['runs', '--status', 'closed'])]);
    expect(runs.code).toBe(0);
    expect(runs.stdout.split('\n')[0]).toMatch(/^RUN +STATUS +OWNER +CREATED +CALLS +SPEND$/);
    expect(runs.stdout).toMatch(new RegExp(`^${runId} +open +agent +\\S+ +2 +\\$0\\.00$`, 'm'));
    expect(badStatus.code).toBe(2);
    expect(badStatus.stderr).toContain('--status must be one of open, cancelled, budget_exhausted, expired');
  }, 120_000);

  it('keys show prints a principal’s key; one held only as a hash, or none, exits with why', async () => {
    stack.editConfig((config) => {
      config.principals.push({
        id: 'hashed',
        keySha256: createHash('sha256').update('tr_hashed_key_0123456789abcdef').digest('hex'),
        roles: ['approver'],
        tools: [],
      });
    });
    const [shown, hashed, nobody, noFile, noKey] = await Promise.all([
      cli(['keys', 'show', 'approver']),
      cli(['keys', 'show', 'hashed']),
      cli(['keys', 'show', 'nobody']),
      cli(['keys', 'show', 'approver'], { TOOLRUNNER_CONFIG: join(root, 'no-such-keys.json') }),
      cli(['approvals'], { TOOLRUNNER_CONFIG: join(root, 'no-such-keys.json') }),
    ]);
    expect(shown).toMatchObject({ code: 0, stdout: `${stack.keys.approver}\n` });
    expect(hashed.code).toBe(1);
    expect(hashed.stderr).toContain('hashed has only a keySha256');
    expect(nobody.code).toBe(2);
    expect(nobody.stderr).toContain('no principal nobody in');
    expect(noFile.code).toBe(1);
    expect(noFile.stderr).toContain('cannot read the keys file');
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain('no key: set TOOLRUNNER_KEY, or pass --as PRINCIPAL');
    noStack(`${hashed.stderr}${nobody.stderr}${noFile.stderr}${noKey.stderr}`);
    // The key taken from TOOLRUNNER_KEY works as well as the file's.
    expect(await cli(['approvals'], { TOOLRUNNER_KEY: stack.keys.approver, TOOLRUNNER_CONFIG: join(root, 'none.json') })).toMatchObject({
      code: 0,
    });
  }, 60_000);
});
