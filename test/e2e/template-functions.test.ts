import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FunctionProcess } from '../../local/template/function-process';
import { LAMBDA_PAYLOAD_LIMIT_BYTES, LambdaFunction } from '../../local/template/lambda-pool';
import { lambdaNode } from '../../local/template/lambda-node';

// A function of our own, run the way template mode runs every function of the template: its code in a
// directory, its handler `index.handler`, in a worker thread of the function's own process (on the Node.js of
// the Lambda runtime when installed) with exactly the environment it is given.
const CODE = `
let invocations = 0;
export const handler = async (event, context) => {
  invocations += 1;
  if (event.sleepMs) await new Promise((r) => setTimeout(r, event.sleepMs));
  if (event.hog) { const keep = []; for (;;) keep.push(new Array(1e6).fill(keep.length)); }
  if (event.bytes) return 'x'.repeat(event.bytes);
  if (event.fail) throw Object.assign(new Error('upstream said no'), { name: 'UpstreamRefused' });
  console.log(JSON.stringify({ level: 'INFO', message: 'invoked', requestId: context.awsRequestId }));
  return { env: { ...process.env }, invocations, remaining: context.getRemainingTimeInMillis(), name: context.functionName, node: process.version };
};
`;

let dir: string;
let fn: LambdaFunction;
let quick: LambdaFunction;
const environment = { TABLE_RUNS: 'local-runs', POWERTOOLS_LOG_LEVEL: 'INFO', AWS_REGION: 'us-east-1' };

const node = lambdaNode('nodejs24.x');
const processes: FunctionProcess[] = [];
const probe = (name: string, timeoutSeconds: number) => {
  const host = new FunctionProcess(node.binary, name, () => undefined);
  processes.push(host);
  return new LambdaFunction({
    name,
    arn: `arn:aws:lambda:us-east-1:000000000000:function:${name}`,
    codeDir: dir,
    handler: 'index.handler',
    environment,
    memoryMb: 128,
    timeoutSeconds,
    logGroupName: `/aws/lambda/${name}`,
    logFile: join(dir, 'logs', `${name}.log`),
    maxConcurrency: 2,
    startInstance: host.start,
  });
};

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'toolrunner-fn-'));
  writeFileSync(join(dir, 'index.mjs'), CODE);
  fn = probe('Probe', 20);
  quick = probe('Quick', 1);
});

afterAll(async () => {
  await fn?.close();
  await quick?.close();
  await Promise.all(processes.map((p) => p.close()));
  rmSync(dir, { recursive: true, force: true });
});

describe('a function as template mode runs it', () => {
  it('sees exactly its own environment and a Lambda context; its output goes to its log', async () => {
    const out = (await fn.invoke({})) as { env: Record<string, string>; remaining: number; name: string };
    expect(out.env).toEqual(environment);
    expect(out.name).toBe('Probe');
    expect(out.remaining).toBeGreaterThan(0);
    expect(out.remaining).toBeLessThanOrEqual(20_000);
    const deadline = Date.now() + 10_000;
    while (!readFileSync(join(dir, 'logs', 'Probe.log'), 'utf8').includes('"message":"invoked"')) {
      if (Date.now() > deadline) throw new Error('the function output never reached its log');
      await new Promise((r) => setTimeout(r, 50));
    }
  });

  it('keeps module state between invocations of one environment (a warm start)', async () => {
    const first = (await fn.invoke({})) as { invocations: number };
    const second = (await fn.invoke({})) as { invocations: number };
    expect(second.invocations).toBe(first.invocations + 1);
  });

  it('reports a thrown error by its name, as Lambda reports errorType', async () => {
    await expect(fn.invoke({ fail: true })).rejects.toMatchObject({ name: 'UpstreamRefused', message: 'upstream said no' });
  });

  it('stops a handler that overruns its timeout: the invocation fails as Lambda times out, the next gets a fresh environment', async () => {
    await quick.invoke({});
    await expect(quick.invoke({ sleepMs: 5_000 })).rejects.toMatchObject({
      name: 'Sandbox.Timedout',
      message: expect.stringContaining('Task timed out after 1.00 seconds'),
    });
    const next = (await quick.invoke({})) as { invocations: number };
    expect(next.invocations).toBe(1);
  });

  it('stops a handler that exceeds its memory', async () => {
    await expect(fn.invoke({ hog: true })).rejects.toMatchObject({ name: 'Runtime.OutOfMemory' });
    expect(((await fn.invoke({})) as { invocations: number }).invocations).toBe(1);
  });

  it('refuses a request or a response over 6 MB, as Lambda does', async () => {
    await expect(fn.invoke({ pad: 'x'.repeat(LAMBDA_PAYLOAD_LIMIT_BYTES) })).rejects.toMatchObject({
      name: 'RequestEntityTooLargeException',
      functionError: false,
    });
    await expect(fn.invoke({ bytes: LAMBDA_PAYLOAD_LIMIT_BYTES + 10 })).rejects.toMatchObject({ name: 'Function.ResponseSizeTooLarge' });
    expect(((await fn.invoke({ bytes: 1000 })) as string).length).toBe(1000);
  });

  it('runs invocations at once in separate environments, up to its concurrency; more wait', async () => {
    const started = Date.now();
    const results = (await Promise.all([0, 1, 2].map(() => fn.invoke({ sleepMs: 600 })))) as { invocations: number }[];
    // Two environments at once, the third waited for one of them.
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_150);
    expect(results.length).toBe(3);
  });

  it("runs in a process of its own, on the Lambda runtime's Node.js major when it is installed", async () => {
    const out = (await fn.invoke({})) as { node: string };
    expect(out.node).toBe(await processes[0].version);
    // scripts/node-major.sh 24 installs it (`.ci/run` does); without it, this machine's Node runs the functions.
    if (!node.note) expect(out.node).toMatch(/^v24\./);
    else expect(out.node).toBe(process.version);
  });

  it('leaves no function process behind when its parent is SIGKILLed', async () => {
    const script = join(dir, 'parent.mts');
    writeFileSync(
      script,
      `import { FunctionProcess } from ${JSON.stringify(join(import.meta.dirname, '../../local/template/function-process.ts'))};
const host = new FunctionProcess(process.execPath, 'Orphan', () => undefined);
await host.version;
console.log('child', (host as any).child.pid);
setInterval(() => undefined, 1000);
`,
    );
    const parent = spawn(process.execPath, ['--import', 'tsx', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let output = '';
    parent.stdout.on('data', (c: Buffer) => (output += c.toString()));
    const deadline = Date.now() + 30_000;
    while (!/child (\d+)/.test(output)) {
      if (Date.now() > deadline) throw new Error(`the parent never reported its function process: ${output}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const child = Number(/child (\d+)/.exec(output)![1]);
    const alive = (pid: number) => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    expect(alive(child)).toBe(true);
    parent.kill('SIGKILL');
    while (alive(child)) {
      if (Date.now() > deadline + 30_000) throw new Error(`function process ${child} outlived its parent`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }, 90_000);
});
