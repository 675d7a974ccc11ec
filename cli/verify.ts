import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { z } from 'zod';
import { parseBoundedJson } from '../functions/core/json-bounds';
import type { ToolSpec } from '../functions/core/tool-spec';
import { isLoopbackHost, probeHosts, type VerifyCase, type VerifyCell, type VerifyResult, verifyTools } from '../functions/testing/verify';

/** The cases file's limit: sample inputs, not data sets. */
export const MAX_CASES_BYTES = 1024 * 1024;

const CasesFile = z.record(z.string(), z.array(z.strictObject({ name: z.string().min(1).max(200).optional(), input: z.unknown() })).min(1));

/** A cases file or tool list verify refuses before running anything (exit 2). */
export class VerifyInputError extends Error {
  override name = 'VerifyInputError';
}

/** The cases to run: the file's for the tools it names, else each tool's `verify.cases`; every input checked against its schema. */
export function casesFor(tools: ToolSpec[], casesPath: string | undefined): Map<string, VerifyCase[]> {
  const byName = new Map(tools.map((t) => [t.name, t]));
  const fromFile = new Map<string, { name?: string; input: unknown }[]>();
  if (casesPath) {
    let size: number;
    try {
      size = statSync(casesPath).size;
    } catch (error) {
      throw new VerifyInputError(`--cases: cannot read ${casesPath}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
    if (size > MAX_CASES_BYTES) throw new VerifyInputError(`--cases: ${casesPath} is over 1 MiB (${size} bytes)`);
    const parsed = parseBoundedJson(readFileSync(casesPath, 'utf8'), ['cases']);
    if (!parsed.ok) throw new VerifyInputError(`--cases: ${parsed.message}`);
    const shape = CasesFile.safeParse(parsed.value);
    if (!shape.success) {
      const issue = shape.error.issues[0];
      throw new VerifyInputError(`--cases: ${issue.path.join('.') || '(root)'}: ${issue.message}`);
    }
    for (const [name, list] of Object.entries(shape.data)) {
      if (!byName.has(name)) throw new VerifyInputError(`--cases: unknown tool ${name} (the tools are ${[...byName.keys()].join(', ')})`);
      fromFile.set(name, list);
    }
  }
  const cases = new Map<string, VerifyCase[]>();
  for (const tool of tools) {
    const list = fromFile.get(tool.name) ?? tool.verify?.cases ?? [];
    cases.set(
      tool.name,
      list.map((c, i) => {
        const name = c.name ?? `${tool.name}[${i}]`;
        const input = tool.inputSchema.safeParse(c.input);
        if (!input.success) {
          const issue = input.error.issues[0];
          throw new VerifyInputError(
            `case ${name} of ${tool.name}: its input fails the tool's schema: ${issue.path.join('.') || '(root)'}: ${issue.message}`,
          );
        }
        return { name, input: c.input };
      }),
    );
  }
  return cases;
}

/** The table a person reads: tool × check, with the reason of whatever did not hold. */
export function formatTable(result: VerifyResult): string {
  const rows = result.cells.map((c) => [c.tool, c.case, c.check, c.verdict, `${c.ms} ms`, c.verdict === 'held' ? '' : c.reason]);
  const head = ['tool', 'case', 'check', 'verdict', 'time', 'reason'];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.slice().map((r) => (i === 5 ? 0 : r[i].length))));
  const line = (r: string[]) =>
    r
      .map((cell, i) => (i === 5 ? cell : cell.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  const out = [line(head), line(widths.map((w, i) => (i === 5 ? '------' : '-'.repeat(w)))), ...rows.map(line)];
  for (const tool of result.tools) {
    out.push(`${tool.name}: ${tool.ms} ms`);
    for (const note of tool.notes) out.push(`note: ${note}`);
  }
  const count = (v: VerifyCell['verdict']) => result.cells.filter((c) => c.verdict === v).length;
  out.push(`${count('held')} held, ${count('broken')} broken, ${count('unverifiable')} unverifiable (not passed)`);
  return `${out.join('\n')}\n`;
}

const escapeXml = (s: string) =>
  s.replace(/[<>&"']/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c]!);

/** JUnit XML: one suite per tool, one test case per case and check; broken is a failure, unverifiable a skip. */
export function junitXml(result: VerifyResult): string {
  const suites = result.tools.map((tool) => {
    const cells = result.cells.filter((c) => c.tool === tool.name);
    const cases = cells.map((c) => {
      const open = `    <testcase classname="${escapeXml(c.tool)}" name="${escapeXml(`${c.case} / ${c.check}`)}" time="${(c.ms / 1000).toFixed(3)}"`;
      if (c.verdict === 'held') return `${open}/>`;
      const body =
        c.verdict === 'broken'
          ? `<failure message="${escapeXml(c.reason)}"/>`
          : `<skipped message="${escapeXml(`unverifiable: ${c.reason}`)}"/>`;
      return `${open}>${body}</testcase>`;
    });
    const failures = cells.filter((c) => c.verdict === 'broken').length;
    const skipped = cells.filter((c) => c.verdict === 'unverifiable').length;
    return `  <testsuite name="${escapeXml(tool.name)}" tests="${cells.length}" failures="${failures}" skipped="${skipped}" time="${(tool.ms / 1000).toFixed(3)}">\n${cases.join('\n')}\n  </testsuite>`;
  });
  return `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="toolrunner verify">\n${suites.join('\n')}\n</testsuites>\n`;
}

/**
 * `toolrunner verify`: the exit code (0 every promise held or could not be checked, 1 one was broken, 2 the
 * input was refused). Writes the hosts, the table and the broken promises through `out` and `err`.
 */
export async function runVerify(
  tools: ToolSpec[],
  options: { casesPath?: string; junitPath?: string; allowEffects: boolean },
  io: { out: (text: string) => void; err: (text: string) => void },
): Promise<number> {
  let cases: Map<string, VerifyCase[]>;
  try {
    cases = casesFor(tools, options.casesPath);
  } catch (error) {
    if (!(error instanceof VerifyInputError)) throw error;
    io.err(`toolrunner: verify: ${error.message}\n`);
    return 2;
  }
  const hosts = await probeHosts(tools, cases);
  io.out('hosts:\n');
  for (const tool of tools) {
    const list = hosts.get(tool.name) ?? [];
    io.out(`  ${tool.name}: ${list.length ? list.join(', ') : cases.get(tool.name)?.length ? '(no request seen)' : '(no cases)'}\n`);
  }
  const remote = [...new Set([...hosts.values()].flat().filter((h) => !isLoopbackHost(h)))];
  if (remote.length && !options.allowEffects) {
    io.err(
      `toolrunner: verify: refusing hosts that are not loopback (${remote.join(', ')}): verify makes real effects there, repeatedly; pass --allow-effects to go on\n`,
    );
    return 2;
  }
  const result = await verifyTools(tools, cases);
  io.out(formatTable(result));
  if (options.junitPath) writeFileSync(options.junitPath, junitXml(result));
  const broken = result.cells.filter((c) => c.verdict === 'broken');
  for (const c of broken) if (c.verdict === 'broken') io.err(`broken: ${c.tool} under ${c.check} (case ${c.case}): ${c.reason}\n`);
  return broken.length ? 1 : 0;
}
