import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fixtureTools from '../fixtures/mcp-conformance-tools';
import { startTestStack, type TestStack } from '../support/stack';

/**
 * The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned and installed with Node 22
 * in prefixes of their own by scripts/mcp-conformance.sh) against `/mcp` of the stack under test. Its client
 * sends no credentials, so it talks to a small proxy on loopback that adds the agent's bearer key and
 * passes everything else through, `Host` and `Origin` included (the DNS-rebinding scenario sets both).
 * Each scenario runs at the revision named (`--spec-version`): `/mcp` serves 2025-11-25 and 2026-07-28 side by side.
 */
const SCENARIOS = {
  // The five the runner passed from the start, at the revision they were written for.
  '2025-11-25': ['server-initialize', 'ping', 'tools-list', 'server-sse-multiple-streams', 'dns-rebinding-protection'],
  // What a client of the stateless revision checks first: discovery through lists, headers, caching hints.
  '2026-07-28': ['tools-list', 'dns-rebinding-protection', 'caching', 'http-header-validation', 'server-sse-multiple-streams'],
} as const;
/** Run against a stack whose tools are the suite's fixtures (test/fixtures/mcp-conformance-tools.ts). */
const WITH_FIXTURES = { '2026-07-28': ['server-stateless'] } as const;

let stack: TestStack;
let fixtures: TestStack;
let proxy: { url: string; close(): Promise<void> };
let fixturesProxy: { url: string; close(): Promise<void> };
const resultsDir = mkdtempSync(join(tmpdir(), 'mcp-conformance-'));

beforeAll(async () => {
  stack = await startTestStack();
  proxy = await bearerProxy(stack.apiUrl, stack.keys.agent);
  fixtures = await startTestStack({ tools: fixtureTools });
  fixturesProxy = await bearerProxy(fixtures.apiUrl, fixtures.keys.agent);
  // Installs the suite and Node 22 on first use (a minute at most), so no scenario below pays for it.
  const version = await conformance(['--version']);
  expect(version.code, version.output).toBe(0);
}, 300_000);
afterAll(async () => {
  await proxy?.close();
  await fixturesProxy?.close();
  await stack?.stop();
  await fixtures?.stop();
  rmSync(resultsDir, { recursive: true, force: true });
});

describe('the MCP conformance suite against /mcp', () => {
  const cases = [
    ...Object.entries(SCENARIOS).flatMap(([revision, scenarios]) => scenarios.map((scenario) => ({ revision, scenario, fixtures: false }))),
    ...Object.entries(WITH_FIXTURES).flatMap(([revision, scenarios]) =>
      scenarios.map((scenario) => ({ revision, scenario, fixtures: true })),
    ),
  ];
  for (const { revision, scenario, fixtures: withFixtures } of cases) {
    it(`${revision} ${scenario}${withFixtures ? ' (fixture tools)' : ''}`, async () => {
      const out = join(resultsDir, revision, scenario);
      const url = `${(withFixtures ? fixturesProxy : proxy).url}/mcp`;
      const run = await conformance(['server', '--url', url, '--scenario', scenario, '--spec-version', revision, '-o', out]);
      const [dir] = readdirSync(out);
      const checks = JSON.parse(readFileSync(join(out, dir, 'checks.json'), 'utf8')) as {
        id: string;
        status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | 'SKIPPED';
        errorMessage?: string;
      }[];
      const summary = checks.map((c) => `${c.id}: ${c.status}${c.errorMessage ? ` (${c.errorMessage})` : ''}`).join('; ');
      console.log(`conformance ${revision} ${scenario}: ${run.output.match(/Passed: .*/)?.[0] ?? '?'}; ${summary}`);
      expect(run.code, run.output).toBe(0);
      expect(checks.filter((c) => c.status === 'SUCCESS').length, summary).toBeGreaterThan(0);
      expect(
        checks.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING'),
        summary,
      ).toEqual([]);
    }, 120_000);
  }
});

function conformance(args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['scripts/mcp-conformance.sh', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });
}

/** A loopback proxy to `target` that adds the bearer key and forwards every header as received, `Host` included. */
async function bearerProxy(target: string, key: string): Promise<{ url: string; close(): Promise<void> }> {
  const upstream = new URL(target);
  const server: Server = createServer((req, res) => {
    const forward = httpRequest(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, authorization: `Bearer ${key}` },
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forward.on('error', () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
