import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classifyAttempt } from '../../functions/core/classify';
import type { Outcome } from '../../functions/core/model';
import { RESULT_LIMITS } from '../../functions/core/result-record';
import { makeRegistry, type ToolSpec } from '../../functions/core/tool-spec';
import type { Deps } from '../../functions/steps/deps';
import { callTool } from '../../functions/steps/tool-call';
import { type LiveToolRegistry, withMcpUpstreams } from '../../functions/tools/mcp-upstream';
import { type ScriptedAnswer, startScriptedMcp } from '../support/scripted-mcp';

/**
 * What an upstream MCP server answers, through the real MCP client and the runner's classification: an
 * answer that arrived is never `timeout_unknown`; one that is not a tool result is `invalid_output`; a
 * tool with a name the runner refuses is skipped alone, with one log line.
 */
const FUZZ_SEED = Number(process.env.FUZZ_SEED ?? 20_261_202);
const FUZZ_RUNS = Math.max(1, Number(process.env.FUZZ_MCP_RUNS ?? 1_000));

const schema = { type: 'object', properties: { n: { type: 'number' } } };
const TOOLS = [
  { name: 'write', inputSchema: schema },
  { name: 'read', inputSchema: schema, annotations: { readOnlyHint: true } },
  { name: 'typed', inputSchema: schema, outputSchema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] } },
  { name: 'bad name', inputSchema: schema },
  { name: 'x'.repeat(80), inputSchema: schema },
  { name: 'evil\u202egnp.exe\n', inputSchema: schema },
  { name: 'fine_too', inputSchema: schema },
];

let next: ScriptedAnswer = { result: { content: [] } };
let upstream: Awaited<ReturnType<typeof startScriptedMcp>>;
let registry: LiveToolRegistry;
const logged: string[] = [];
const deps = { now: Date.now } as unknown as Deps;

beforeAll(async () => {
  upstream = await startScriptedMcp({ tools: TOOLS, answer: () => next });
  registry = withMcpUpstreams(makeRegistry([]), async () => ({ mcpUpstreams: [{ name: 'up', url: upstream.url }] }), {
    log: (line) => logged.push(line),
    retryMs: 0,
  });
  await registry.refresh();
});
afterAll(async () => {
  await upstream?.close();
});

async function answered(tool: string, answer: ScriptedAnswer): Promise<Outcome> {
  next = answer;
  const spec = registry.get(`up__${tool}`) as ToolSpec;
  const call = await callTool(deps, 'op_test', { idempotencyKey: 'idk_test', attempt: 1, timeoutMs: 5_000, abortOnCancel: false }, (ctx) =>
    spec.execute(ctx, { n: 1 }),
  );
  return classifyAttempt(spec, call.ok ? { ok: true, value: call.value } : { ok: false, thrown: call.thrown });
}

describe('upstream MCP tools and answers', () => {
  it('skips each tool with a bad name alone, one log line each, and keeps the others without retrying', async () => {
    expect([...registry.keys()].sort()).toEqual(['up__fine_too', 'up__read', 'up__typed', 'up__write']);
    const skipped = logged.filter((l) => l.includes('skipped'));
    expect(skipped).toHaveLength(3);
    expect(skipped[0]).toContain('"bad name"');
    // The name is shown escaped: no newline, no direction override in the log.
    for (const line of skipped) expect(line).not.toMatch(/[\n\u202e]/);
    const lists = upstream.listed();
    await registry.refresh();
    await registry.refresh();
    expect(upstream.listed()).toBe(lists);
  });

  it('labels every answer by what it is, never timeout_unknown when an answer arrived', async () => {
    const text = (bytes: number) => ({ result: { content: [{ type: 'text', text: 'x'.repeat(bytes) }] } });
    // A JSON-RPC error: the upstream refused the call; it did not run it.
    expect(await answered('write', { error: { code: -32603, message: 'internal' } })).toMatchObject({
      kind: 'failed_permanent',
      code: 'permanent_failure',
    });
    // The tool ran and reported an error.
    expect(await answered('write', { result: { content: [{ type: 'text', text: 'no' }], isError: true } })).toMatchObject({
      kind: 'failed_permanent',
      code: 'permanent_failure',
    });
    // Not a CallToolResult, a body that is not JSON, structured content against the declared schema.
    for (const bad of [
      { result: { content: 'not a list' } },
      { result: { content: [{ type: 'nonsense' }] } },
      { http: 200, body: '{"jsonrpc":"2.0", nope' },
    ] satisfies ScriptedAnswer[]) {
      expect(await answered('write', bad)).toMatchObject({ kind: 'outcome_unknown', code: 'invalid_output' });
      expect(await answered('read', bad)).toMatchObject({ kind: 'failed_permanent', code: 'invalid_output' });
    }
    expect(await answered('typed', { result: { content: [], structuredContent: { id: 7 } } })).toMatchObject({
      code: 'invalid_output',
    });
    expect(await answered('typed', { result: { content: [] } })).toMatchObject({ code: 'invalid_output' });
    // 5 MB is recorded (up to 5 MiB); above that nothing can be.
    const five = await answered('write', text(5_000_000));
    expect(five).toMatchObject({ kind: 'succeeded', result: { omitted: true } });
    expect((five as { result: { bytes: number } }).result.bytes).toBeGreaterThan(5_000_000);
    expect(await answered('write', text(RESULT_LIMITS.maxRecordedBytes))).toMatchObject({
      kind: 'outcome_unknown',
      code: 'invalid_output',
    });
    // No answer at all is what stays unknown for a write (and a 500, after which it may have committed); a read is retried.
    expect(await answered('write', { http: 500 })).toMatchObject({ kind: 'outcome_unknown', code: 'timeout_unknown' });
    expect(await answered('write', { reset: true })).toMatchObject({ kind: 'outcome_unknown', code: 'timeout_unknown' });
    expect(await answered('read', { reset: true })).toMatchObject({ kind: 'failed_retryable' });
    expect(await answered('write', { http: 503 })).toMatchObject({ kind: 'failed_retryable', code: 'upstream_unavailable' });
    expect(await answered('write', { http: 429 })).toMatchObject({ kind: 'failed_retryable', code: 'rate_limited' });
  }, 60_000);

  it(`fuzz: ${FUZZ_RUNS} seeded answers (seed ${FUZZ_SEED}) are classified, none as timeout_unknown, none thrown`, async () => {
    const json = fc.jsonValue({ maxDepth: 4 });
    const block = fc.oneof(
      fc.record({ type: fc.constant('text'), text: fc.string() }),
      fc.record({ type: fc.constantFrom('image', 'audio'), data: fc.base64String(), mimeType: fc.string() }),
      fc.dictionary(fc.string(), json),
    );
    const answer: fc.Arbitrary<ScriptedAnswer> = fc.oneof(
      fc.record({
        result: fc.record({ content: fc.array(block, { maxLength: 4 }), isError: fc.option(fc.boolean(), { nil: undefined }) }),
      }),
      fc.record({ result: fc.record({ content: fc.array(block), structuredContent: fc.dictionary(fc.string(), json) }) }),
      fc.record({ result: json }),
      fc.record({ error: fc.record({ code: fc.integer(), message: fc.string() }) }),
      fc.record({ http: fc.constant(200), body: fc.string({ maxLength: 200 }) }),
      fc.record({ http: fc.constantFrom(200, 400, 404, 500, 502, 503), body: json.map((v) => JSON.stringify(v)) }),
    );
    const tool = fc.constantFrom('write', 'read', 'typed');
    const seen = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(tool, answer, async (name, a) => {
        const outcome = await answered(name, a);
        const label = `${outcome.kind}${'code' in outcome ? `/${outcome.code}` : ''}`;
        seen.set(label, (seen.get(label) ?? 0) + 1);
        // Only a 500 to a write stays unknown: the upstream may have committed before it failed.
        const mayBeUnknown = 'http' in a && a.http === 500 && name !== 'read';
        if (!mayBeUnknown)
          expect(outcome.kind === 'outcome_unknown' && outcome.code === 'timeout_unknown', JSON.stringify(a).slice(0, 300)).toBe(false);
      }),
      { seed: FUZZ_SEED, numRuns: FUZZ_RUNS },
    );
    console.log(`mcp answers fuzz (seed ${FUZZ_SEED}, ${FUZZ_RUNS} cases): ${JSON.stringify(Object.fromEntries(seen))}`);
    expect(seen.size).toBeGreaterThanOrEqual(4);
  }, 300_000);
});
