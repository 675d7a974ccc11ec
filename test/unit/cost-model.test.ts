import { describe, expect, it } from 'vitest';
import {
  lambdaDurationMs,
  accessLogLine,
  awsHistory,
  deployedShape,
  executionLogLines,
  ingestedBytes,
  platformLines,
  type FunctionShape,
  type MachineShape,
} from '../../bench/cost-model';
import type { CfnTemplate } from '../../local/template/assembly';
import { indexBytes, itemBytes, recoveredTables, storageUsd } from '../../bench/storage-cost';
import { TABLES } from '../../functions/adapters/tables';

/** An Express execution of a call that needs no person, as the embedded engine records it. */
const happyPath = [
  { type: 'ExecutionStarted' },
  { type: 'ChoiceStateEntered', state: 'Route' },
  { type: 'ChoiceStateExited', state: 'Route' },
  { type: 'TaskStateEntered', state: 'Execute' },
  { type: 'TaskStateExited', state: 'Execute' },
  { type: 'ChoiceStateEntered', state: 'Route' },
  { type: 'ChoiceStateExited', state: 'Route' },
  { type: 'SucceedStateEntered', state: 'Done' },
  { type: 'SucceedStateExited', state: 'Done' },
  { type: 'ExecutionSucceeded' },
];
const express = (logLevel: MachineShape['logLevel']): MachineShape => ({
  name: 'm-express',
  type: 'EXPRESS',
  logLevel,
  includeExecutionData: false,
  tracing: false,
});
const arn = 'arn:aws:states:us-east-1:000000000000:express:m-express:op_1:0123456789abcdef';

describe('the cost model', () => {
  it('reads the API type, the function the API invokes, and each machine and function setting from the template', () => {
    const template: CfnTemplate = {
      Resources: {
        Api: { Type: 'AWS::ApiGatewayV2::Api', Properties: { ProtocolType: 'HTTP' } },
        Stage: { Type: 'AWS::ApiGatewayV2::Stage', Properties: { AccessLogSettings: { Format: '{"s":"$context.status"}' } } },
        Integration: { Type: 'AWS::ApiGatewayV2::Integration', Properties: { IntegrationUri: { 'Fn::GetAtt': ['ApiFn', 'Arn'] } } },
        ApiFn: {
          Type: 'AWS::Lambda::Function',
          Properties: {
            Architectures: ['arm64'],
            TracingConfig: { Mode: 'Active' },
            LoggingConfig: { LogFormat: 'JSON', SystemLogLevel: 'WARN' },
          },
        },
        Other: { Type: 'AWS::Lambda::Function', Properties: {} },
        Machine: {
          Type: 'AWS::StepFunctions::StateMachine',
          Properties: { StateMachineName: 'm-express', StateMachineType: 'EXPRESS', LoggingConfiguration: { Level: 'ERROR' } },
        },
      },
    };
    const shape = deployedShape(template);
    expect(shape.api).toEqual({ type: 'HTTP', accessLogFormat: '{"s":"$context.status"}', functionId: 'ApiFn' });
    expect(shape.functions.get('ApiFn')).toEqual({ architecture: 'arm64', tracing: 'Active', logFormat: 'JSON', systemLogLevel: 'WARN' });
    expect(shape.functions.get('Other')).toEqual({
      architecture: 'x86_64',
      tracing: 'PassThrough',
      logFormat: 'Text',
      systemLogLevel: 'INFO',
    });
    expect(shape.machines.get('m-express')).toMatchObject({ type: 'EXPRESS', logLevel: 'ERROR', tracing: false });
  });

  it('refuses a template without exactly one API', () => {
    expect(() => deployedShape({ Resources: {} })).toThrow(/exactly one/);
  });

  it('adds the task events Step Functions records: 13 log events for a call at level ALL, none at ERROR', () => {
    expect(awsHistory(happyPath).map((e) => e.type)).toEqual([
      'ExecutionStarted',
      'ChoiceStateEntered',
      'ChoiceStateExited',
      'TaskStateEntered',
      'TaskScheduled',
      'TaskStarted',
      'TaskSucceeded',
      'TaskStateExited',
      'ChoiceStateEntered',
      'ChoiceStateExited',
      'SucceedStateEntered',
      'SucceedStateExited',
      'ExecutionSucceeded',
    ]);
    const all = executionLogLines(express('ALL'), { executionArn: arn, history: happyPath });
    expect(all).toHaveLength(13);
    expect(JSON.parse(all[0])).toMatchObject({ id: '1', type: 'ExecutionStarted', execution_arn: arn });
    expect(executionLogLines(express('ERROR'), { executionArn: arn, history: happyPath })).toEqual([]);
    expect(executionLogLines(express('OFF'), { executionArn: arn, history: happyPath })).toEqual([]);
  });

  it('writes failures at ERROR, only the execution’s own at FATAL', () => {
    const failed = [...happyPath.slice(0, 4), { type: 'StateFailed', state: 'Execute' }, { type: 'ExecutionFailed' }];
    const types = (level: MachineShape['logLevel']) =>
      executionLogLines(express(level), { executionArn: arn, history: failed }).map((l) => JSON.parse(l).type);
    expect(types('ERROR')).toEqual(['TaskFailed', 'ExecutionFailed']);
    expect(types('FATAL')).toEqual(['ExecutionFailed']);
  });

  it('writes START, END and REPORT per invocation in text format, nothing of its own in JSON format at WARN', () => {
    const text: FunctionShape = { architecture: 'arm64', tracing: 'PassThrough', logFormat: 'Text', systemLogLevel: 'INFO' };
    const lines = platformLines(text, { durationMs: 12.3, memoryMb: 256, traced: false });
    expect(lines.map((l) => l.split(' ')[0])).toEqual(['START', 'END', 'REPORT']);
    expect(lines[2]).toContain('Billed Duration: 13 ms\tMemory Size: 256 MB');
    expect(platformLines({ ...text, tracing: 'Active' }, { durationMs: 1, memoryMb: 256, traced: true })[2]).toContain('XRAY TraceId');
    expect(platformLines({ ...text, logFormat: 'JSON', systemLogLevel: 'WARN' }, { durationMs: 1, memoryMb: 256, traced: false })).toEqual(
      [],
    );
    expect(
      platformLines({ ...text, logFormat: 'JSON' }, { durationMs: 1, memoryMb: 256, traced: false }).map((l) => JSON.parse(l).type),
    ).toEqual(['platform.start', 'platform.report']);
  });

  it('fills an access log format from the request and counts 26 bytes per event beside the message', () => {
    const line = accessLogLine('{"m":"$context.httpMethod","p":"$context.path","s":"$context.status","x":"$context.unknown"}', {
      method: 'POST',
      path: '/v1/runs/r/tool-calls',
      status: 200,
      responseBytes: 5000,
      latencyMs: 250,
    });
    expect(JSON.parse(line)).toEqual({ m: 'POST', p: '/v1/runs/r/tool-calls', s: '200', x: '-' });
    expect(ingestedBytes(['abc', 'é'])).toBe(3 + 26 + 2 + 26);
  });

  it("stretches an invocation's busy time by the share of a vCPU its memory buys, and leaves its waiting as measured", () => {
    // 300 ms measured, 20 of them busy: at 1,769 MB and above one whole vCPU, at half of that half a vCPU.
    expect(lambdaDurationMs(300, 20, 1769)).toBe(300);
    expect(lambdaDurationMs(300, 20, 3008)).toBe(300);
    expect(lambdaDurationMs(300, 20, 1769 / 2)).toBeCloseTo(320, 6);
    expect(lambdaDurationMs(300, 20, 512)).toBeCloseTo(300 + 20 * (1769 / 512 - 1), 6);
    // Busy time is part of the measured time: never more of it than was measured.
    expect(lambdaDurationMs(10, 20, 1769 / 2)).toBeCloseTo(20, 6);
  });
});

describe('DynamoDB storage and point-in-time recovery in the cost model', () => {
  it('sizes items as DynamoDB bills them: names and values, 100 bytes an item, index copies where an item has their keys', () => {
    const item = { operationId: { S: 'op_1' }, n: { N: '12345' }, ok: { BOOL: true }, m: { M: { a: { S: 'xy' } } } };
    // 11+4, 1+4 (five digits: 3 bytes and 1), 2+1, 1+(3+1+1+2); plus 100.
    expect(itemBytes(item)).toBe(100 + 15 + 5 + 3 + 8);
    const ops = TABLES.find((t) => t.id === 'operations')!;
    expect(indexBytes(ops, item)).toBe(0);
    const pending = { ...item, approvalPendingKey: { S: 'pending' }, createdAt: { S: '2026-01-01' } };
    expect(indexBytes(ops, pending)).toBe(itemBytes(pending));
  });

  it('reads which tables the template recovers, and prices storage everywhere and recovery only there', () => {
    const table = (partition: string, sort: string | undefined, pitr: boolean) => ({
      Type: 'AWS::DynamoDB::Table',
      Properties: {
        KeySchema: [{ AttributeName: partition }, ...(sort ? [{ AttributeName: sort }] : [])],
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: pitr },
      },
    });
    const recovered = recoveredTables({
      Resources: { Ops: table('operationId', undefined, true), Watch: table('shard', 'watchKey', false) },
    });
    expect([...recovered]).toEqual(['operations']);
    // One GB held a 730-hour month in each: $0.25 of storage each, $0.20 of recovery for the recovered one.
    const month = 730 * 3600;
    const usd = storageUsd({ operations: 1e9 * month, watch: 1e9 * month }, recovered);
    expect(usd.storage).toBeCloseTo(0.5, 10);
    expect(usd.pitr).toBeCloseTo(0.2, 10);
  });
});
