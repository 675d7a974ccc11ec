import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { judge, type Observation } from '../../functions/testing/verdict';
import { createSandbox } from '../../sandbox/server';

const root = join(import.meta.dirname, '../..');

/** `toolrunner verify` as a user runs it, in its own process. */
function verify(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'cli/main.ts', 'verify', ...args], {
      cwd: root,
      env: { ...process.env, ...env },
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (err += c));
    child.on('close', (code) => resolve({ code, out, err }));
  });
}

const write: Observation['tool'] = { name: 'create_invoice', risk: 'irreversible_write', supportsIdempotency: true, hasReconcile: false };
const seen = (o: Partial<Observation>): Observation => ({
  tool: write,
  fault: 'response_lost',
  status: 'succeeded',
  effects: 1,
  executeRequests: 2,
  methods: ['POST', 'POST'],
  outputProblems: [],
  ...o,
});

describe("verify's verdict on one case", () => {
  it('two effects for one idempotency key are broken, naming that the upstream ignores the key', () => {
    expect(judge(seen({ effects: 2 }))).toEqual({
      verdict: 'broken',
      reason: 'the upstream ignores the idempotency key: 2 effects for one call whose requests all carried the same key',
    });
    expect(judge(seen({ effects: 2, tool: { ...write, supportsIdempotency: false } }))).toMatchObject({ verdict: 'broken' });
  });

  it('holds at one effect for a success, none for a failure; an unknown outcome waits for a person only without reconcile', () => {
    expect(judge(seen({}))).toEqual({ verdict: 'held' });
    expect(judge(seen({ status: 'failed', effects: 0 }))).toEqual({ verdict: 'held' });
    expect(judge(seen({ status: 'failed', effects: 1 }))).toMatchObject({ verdict: 'broken' });
    expect(judge(seen({ status: 'succeeded', effects: 0 }))).toMatchObject({ verdict: 'broken' });
    expect(judge(seen({ status: 'outcome_unknown', effects: 1 }))).toEqual({ verdict: 'held' });
    expect(judge(seen({ status: 'outcome_unknown', effects: 1, tool: { ...write, hasReconcile: true } }))).toMatchObject({
      verdict: 'broken',
    });
  });

  it('is unverifiable, never held, when execute bypassed ctx.fetch or nothing counts effects', () => {
    expect(judge(seen({ executeRequests: 0 }))).toMatchObject({ verdict: 'unverifiable', reason: expect.stringContaining('ctx.fetch') });
    expect(judge(seen({ effects: undefined }))).toMatchObject({ verdict: 'unverifiable' });
  });

  it('checks the declared contract: outputSchema, timeoutMs, a read writes nothing', () => {
    expect(judge(seen({ outputProblems: ['id: Required'] }))).toMatchObject({ verdict: 'broken' });
    expect(judge(seen({ overranMs: 900 }))).toMatchObject({ verdict: 'broken', reason: expect.stringContaining('ctx.signal') });
    const read = { ...write, risk: 'read' as const };
    expect(judge(seen({ tool: read, effects: undefined, methods: ['GET'] }))).toEqual({ verdict: 'held' });
    expect(judge(seen({ tool: read, effects: undefined, methods: ['POST'] }))).toMatchObject({ verdict: 'broken' });
  });
});

describe('toolrunner verify', () => {
  const dir = mkdtempSync(join(tmpdir(), 'verify-'));
  const sandbox = createSandbox(dir);
  let sandboxUrl: string;
  beforeAll(async () => {
    await new Promise<void>((r) => sandbox.listen(0, '127.0.0.1', r));
    sandboxUrl = `http://127.0.0.1:${(sandbox.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((r) => sandbox.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  it('fails the example whose upstream ignores the idempotency key: exit 1, naming tool, fault and what it saw', async () => {
    const { code, out, err } = await verify(['--tools', 'examples/forgetful-upstream.ts']);
    expect(code).toBe(1);
    expect(out).toMatch(/create_invoice: 127\.0\.0\.1:\d+/);
    expect(err).toContain(
      'broken: create_invoice under response_lost (case one invoice): the upstream ignores the idempotency key: 2 effects for one call',
    );
    expect(out).toContain('create_invoice is weaker than it could be');
  });

  it('passes the sandbox tools under every fault, with JUnit XML', async () => {
    const junit = join(dir, 'verify.xml');
    const { code, out, err } = await verify(['--tools', 'functions/tools/demo-entry.ts', '--junit', junit], { SANDBOX_URL: sandboxUrl });
    expect({ code, err }).toEqual({ code: 0, err: '' });
    const rows = out.split('\n').filter((l) => /^(get_order|charge_card|send_email|update_shipping_address) /.test(l));
    expect(rows).toHaveLength(7 + 8 + 7 + 14);
    for (const row of rows) expect(row).toMatch(/ held /);
    const xml = readFileSync(junit, 'utf8');
    expect(xml.match(/<testsuite /g)).toHaveLength(4);
    expect(xml).not.toContain('<failure');
  });

  it('exits 2 for an unknown tool or an input that fails its schema, naming the case', async () => {
    const cases = join(dir, 'cases.json');
    writeFileSync(cases, JSON.stringify({ refund: [{ input: {} }] }));
    const unknown = await verify(['--tools', 'examples/forgetful-upstream.ts', '--cases', cases]);
    expect(unknown.code).toBe(2);
    expect(unknown.err).toContain('unknown tool refund');
    writeFileSync(cases, JSON.stringify({ create_invoice: [{ name: 'negative', input: { customer: 'c', amountCents: -1 } }] }));
    const bad = await verify(['--tools', 'examples/forgetful-upstream.ts', '--cases', cases]);
    expect(bad.code).toBe(2);
    expect(bad.err).toContain("case negative of create_invoice: its input fails the tool's schema: amountCents");
  });

  it('lists the hosts and refuses one that is not loopback without --allow-effects', async () => {
    const { code, out, err } = await verify(['--tools', 'test/fixtures/verify-remote-tools.ts']);
    expect(code).toBe(2);
    expect(out).toContain('remote_charge: payments.example.com');
    expect(err).toContain('refusing hosts that are not loopback (payments.example.com)');
  });
});
