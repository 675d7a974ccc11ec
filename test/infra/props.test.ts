import { App, Stack } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { describe, expect, it } from 'vitest';
import { DEMO_TOOLS_ENTRY } from '../../infra/bundling';
import { resolveToolRunnerProps } from '../../infra/props';
import { ToolRunner, type ToolRunnerProps } from '../../infra/tool-runner';

const tools = { entry: DEMO_TOOLS_ENTRY() };

/** Props refused by checks that once ran between resources (the first after the tables, the last after the alarms topic). */
const BAD: [string, Partial<ToolRunnerProps>, RegExp][] = [
  ['toolMemoryMb', { toolMemoryMb: 64 }, /toolMemoryMb must be an integer from 128 to 10240/],
  ['runtime', { runtime: lambda.Runtime.NODEJS_20_X }, /runtime nodejs20.x is not a Node.js runtime of version 22 or newer/],
  ['blobRetentionDays', { blobRetentionDays: 0 }, /blobRetentionDays must be a positive integer/],
  ['principals', { principals: [{ id: '' } as never] }, /ToolRunner: principals: not a valid config document/],
  [
    'approvers',
    { approvers: [{ id: 'alice', email: 'alice@example.com' }, { id: 'bob' }] },
    /approvers\[1\] \(bob\) needs exactly one of email and subscription/,
  ],
  ['stateMachineNamePrefix', { stateMachineNamePrefix: 'has space' }, /stateMachineNamePrefix must be 1 to 61/],
  ['policiesFile', { policiesFile: '/nonexistent/p.cedar' }, /policiesFile \/nonexistent\/p.cedar does not exist/],
  ['tools', { tools: { entry: '/nonexistent/tools.ts' } }, /tools.entry \/nonexistent\/tools.ts does not exist/],
  ['toolIsolation', { toolIsolation: 'sandbox' as 'none' }, /toolIsolation must be "function" or "none"/],
  ['alarmNamePrefix', { alarmNamePrefix: 'bad prefix' }, /alarmNamePrefix must be 1 to 200/],
];

describe('the construct’s props, checked before anything is built', () => {
  it.each(BAD)('refuse a bad %s with nothing added to the user’s tree', (_name, bad, message) => {
    const stack = new Stack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), 'Props');
    expect(() => new ToolRunner(stack, 'Runner', { tools, ...bad })).toThrow(message);
    expect(stack.node.children.map((c) => c.node.path)).toEqual([]);
  });

  it('are refused by resolveToolRunnerProps alone, without a stack', () => {
    for (const [, bad, message] of BAD) expect(() => resolveToolRunnerProps({ tools, ...bad })).toThrow(message);
  });

  it('name the first bad prop in the order the checks always ran', () => {
    expect(() => resolveToolRunnerProps({ tools, blobRetentionDays: 0, approvers: [{ id: '' }] })).toThrow(
      /blobRetentionDays must be a positive integer/,
    );
    expect(() => resolveToolRunnerProps({ tools, toolMemoryMb: 1, apiMemoryMb: 1, runtime: lambda.Runtime.NODEJS_20_X })).toThrow(
      /toolMemoryMb must be/,
    );
  });

  it('fill in the defaults the construct builds from', () => {
    const resolved = resolveToolRunnerProps({ tools });
    expect(resolved).toMatchObject({
      apiMemoryMb: 256,
      toolMemoryMb: 128,
      bundleTarget: 'node24',
      maxWaitingPolls: 2,
      longestWait: 25,
      blobRetentionDays: 31,
      isolated: true,
      actionsEnabled: true,
    });
    // No principals prop: the operator owns the document; no TTL prop: the document's (or its default) decides.
    expect(resolved.ownedPrincipals).toBeUndefined();
    expect(resolved.approvalTtlSeconds).toBeUndefined();
    expect(resolved.warnings.map((w) => w.id)).toEqual(['toolrunner:alarms-reach-nobody']);
  });
});
