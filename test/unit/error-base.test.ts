import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { LambdaClient } from '@aws-sdk/client-lambda';
import { describe, expect, it } from 'vitest';
import { lambdaToolHost, ToolFunctionError } from '../../functions/adapters/tool-function';
import { createClient, ToolRunnerError } from '../../functions/client';
import * as errors from '../../functions/core/errors';
import { InvalidTransitionError } from '../../functions/core/lifecycle';
import { ContentionError, OperationConflictError, OperationExistsError, RunChangedError } from '../../functions/core/ports';
import { crossError } from '../../functions/core/tool-invocation';
import { ToolRegistrationError } from '../../functions/core/tool-spec';
import { InvalidEventError } from '../../functions/core/transition-table';
import { InvalidParamsError } from '../../functions/mcp/tool-calls';
import { DataDirInUseError } from '../../local/data-dir-owner';

const root = join(import.meta.dirname, '../..');
const { RunnerError } = errors;

function sources(dir: string): string[] {
  return readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))
    .map((f) => join(root, dir, f));
}

describe('the error base class', () => {
  it('is what every error class of the runner extends, each keeping the name the state machine and tests match', () => {
    const cases: [Error, string][] = [
      [new errors.ApprovalRejectedError('no'), 'ApprovalRejectedError'],
      [new errors.OperationMovedError('moved'), 'OperationMovedError'],
      [new errors.UpstreamHttpError(503, undefined, undefined, 'x'), 'UpstreamHttpError'],
      [new errors.TransportError('reset', true, 'x'), 'TransportError'],
      [new errors.MalformedAnswerError('x'), 'MalformedAnswerError'],
      [new OperationExistsError(undefined), 'OperationExistsError'],
      [new RunChangedError('x'), 'RunChangedError'],
      [new OperationConflictError(undefined), 'OperationConflictError'],
      [new ContentionError('x'), 'ContentionError'],
      [new ToolRegistrationError('x'), 'ToolRegistrationError'],
      [new InvalidEventError('recorded', 'report'), 'InvalidEventError'],
      [new InvalidTransitionError('recorded', 'executing'), 'InvalidTransitionError'],
      [new ToolFunctionError('x'), 'ToolFunctionError'],
      [new InvalidParamsError('x'), 'InvalidParamsError'],
      [new ToolRunnerError(400, 'bad', 'x'), 'ToolRunnerError'],
      [new DataDirInUseError('/tmp/x', { pid: 1, command: 'c', startedAt: 's' }), 'DataDirInUseError'],
    ];
    for (const [error, name] of cases) {
      expect(error, name).toBeInstanceOf(RunnerError);
      expect(error.name).toBe(name);
    }
  });

  it('is the only thing an error class under functions/ or local/ extends directly, besides the runner’s own errors', () => {
    const direct = [...sources('functions'), ...sources('local')].flatMap((file) =>
      [...readFileSync(file, 'utf8').matchAll(/class (\w+) extends Error\b/g)].map((m) => `${relative(root, file)}: ${m[1]}`),
    );
    // The emulated AWS services' errors (local/sfn-endpoint.ts, local/template/lambda-pool.ts) are AWS's shapes, not the runner's.
    expect(direct.filter((d) => d.includes('core/errors.ts: RunnerError'))).toHaveLength(1);
    expect(direct.filter((d) => !/core\/errors\.ts: RunnerError|sfn-endpoint\.ts: SfnError|lambda-pool\.ts: LambdaError/.test(d))).toEqual(
      [],
    );
  });

  it('carries `cause`, which never crosses to the Tools function’s caller nor into a JSON body', () => {
    const reset = Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    const error = new errors.TransportError('reset', true, 'no answer', { cause: reset });
    expect(error.cause).toBe(reset);
    expect(new errors.TransportError('reset', true, 'no answer').cause).toBeUndefined();
    expect(crossError(error)).toEqual({ name: 'TransportError', message: 'no answer', fields: { reason: 'reset', requestSent: true } });
    expect(JSON.stringify(error)).not.toContain('socket hang up');
  });
});

describe('wrappings keep what they wrap as `cause`', () => {
  it('the Tools function host: a refused invocation and a lost answer', async () => {
    const refused = Object.assign(new Error('Rate exceeded'), { name: 'TooManyRequestsException', $metadata: { httpStatusCode: 429 } });
    const lost = Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    for (const thrown of [refused, lost]) {
      const client = {
        send: async () => {
          throw thrown;
        },
      } as unknown as LambdaClient;
      const ctx = {
        idempotencyKey: 'k',
        attempt: 1,
        deadline: Date.now() + 5_000,
        signal: new AbortController().signal,
        onUpstreamStatus() {},
        fetch,
      };
      const error = await lambdaToolHost(client, 'tools-fn', new Set(['t']))
        .run({ action: 'execute', tool: 't', operationId: 'op_1', arguments: '{}' }, ctx)
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(errors.TransportError);
      expect((error as Error).cause).toBe(thrown);
    }
  });

  it('the client: a network failure and an answer that is not JSON', async () => {
    const down = new TypeError('fetch failed');
    const offline = createClient({
      baseUrl: 'http://127.0.0.1:9',
      apiKey: 'k',
      fetch: async () => {
        throw down;
      },
    });
    const network = await offline.createRun().catch((e: unknown) => e);
    expect(network).toMatchObject({ name: 'ToolRunnerError', code: 'network_error' });
    expect((network as Error).cause).toBe(down);
    const garbled = createClient({
      baseUrl: 'http://127.0.0.1:9',
      apiKey: 'k',
      fetch: async () => new Response('<html>', { status: 502 }),
    });
    const invalid = await garbled.createRun().catch((e: unknown) => e);
    expect(invalid).toMatchObject({ name: 'ToolRunnerError', code: 'invalid_response' });
    expect((invalid as Error).cause).toBeInstanceOf(SyntaxError);
  });
});
