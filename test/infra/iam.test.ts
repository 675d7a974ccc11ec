import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FUNCTIONS, type FunctionName } from '../../infra/functions';
import { actionsOf, COMMAND_ACTIONS, PORT_COMMANDS } from '../../infra/permissions';
import { synthDemo } from '../support/synth';
import { placeholdersIn, readDefinition, readExpressDefinition } from '../../statemachines/definition';

/** Every `new XxxCommand(` in the given files: the AWS calls the code can make. */
function commandsIn(files: string[]): Set<string> {
  return new Set(
    files.flatMap((f) => [...readFileSync(f, 'utf8').matchAll(/new\s+(?:[\w$]+\.)?([A-Z][A-Za-z0-9]*Command)\s*\(/g)].map((m) => m[1])),
  );
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

// Powertools idempotency (the submission guard) sends its own DynamoDB commands on the idempotency table.
const powertoolsPersistence = createRequire(import.meta.url).resolve('@aws-lambda-powertools/idempotency/dynamodb');

/** Granted to every function for logs (its own group) and X-Ray; not part of the runner's own calls. */
const PLATFORM = new Set(['logs:CreateLogStream', 'logs:PutLogEvents', 'xray:PutTraceSegments', 'xray:PutTelemetryRecords']);

describe('IAM is what the code calls', () => {
  const { template } = synthDemo();
  const used = commandsIn([...sourceFiles('functions'), powertoolsPersistence]);

  it('knows the IAM actions of every AWS SDK command the sources send', () => {
    expect(used.size).toBeGreaterThan(10);
    for (const command of used) expect(COMMAND_ACTIONS, `add ${command} to infra/permissions.ts`).toHaveProperty(command);
  });

  it('declares each command in a port, and no port sends a command the code does not', () => {
    const declared = new Set<string>(Object.values(PORT_COMMANDS).flat());
    expect([...used].filter((c) => !declared.has(c))).toEqual([]);
    expect([...declared].filter((c) => !used.has(c))).toEqual([]);
  });

  it('grants each function exactly the actions of the ports it uses, nothing else', () => {
    const functions = template.findResources('AWS::Lambda::Function');
    const policies = Object.values(template.findResources('AWS::IAM::Policy'));
    for (const [name, spec] of Object.entries(FUNCTIONS) as [FunctionName, (typeof FUNCTIONS)[FunctionName]][]) {
      const [fn] = Object.entries(functions)
        .filter(([id]) => id.startsWith(`Runner${name}Function`))
        .map(([, f]) => f);
      const roleId = fn.Properties.Role['Fn::GetAtt'][0] as string;
      const statements = policies
        .filter((p) => p.Properties.Roles.some((r: { Ref: string }) => r.Ref === roleId))
        .flatMap((p) => p.Properties.PolicyDocument.Statement);
      const granted = [...new Set(statements.flatMap((s: { Action: string | string[] }) => [s.Action].flat()))]
        .filter((a) => !PLATFORM.has(a))
        .sort();
      // DeleteItem only where something is ever deleted (a released lock, Powertools' own records).
      const deletes = spec.tables.some(
        (t) => t === 'locks' || (t === 'idempotency' && (spec.ports as readonly string[]).includes('onceGuard')),
      );
      expect(granted, name).toEqual(actionsOf(spec.ports).filter((a) => deletes || a !== 'dynamodb:DeleteItem'));
    }
  });

  it('lets no role delete from the runs, operations, events or watch tables', () => {
    const tables = template.findResources('AWS::DynamoDB::Table');
    const idOf = (layout: string) => Object.keys(tables).find((id) => id.toLowerCase().includes(`${layout}table`))!;
    const deletable = Object.values(template.findResources('AWS::IAM::Policy'))
      .flatMap((p) => p.Properties.PolicyDocument.Statement)
      .filter((st: { Action: string | string[] }) => [st.Action].flat().includes('dynamodb:DeleteItem'))
      .flatMap((st: { Resource: unknown }) => [st.Resource].flat())
      .map((r: any) => r['Fn::GetAtt']?.[0] as string);
    expect(deletable.length).toBeGreaterThan(0);
    for (const kept of ['runs', 'operations', 'events', 'watch']) expect(deletable, kept).not.toContain(idOf(kept));
    expect(new Set(deletable)).toEqual(new Set([idOf('locks'), idOf('idempotency')].filter((id) => deletable.includes(id))));
  });

  it('grants none of the broad actions the old grants carried', () => {
    const text = JSON.stringify(template.toJSON());
    // BatchGetItem is not among them: the store reads a run's operations in batches (dynamo-watch.ts).
    for (const action of [
      'dynamodb:Scan',
      'dynamodb:BatchWriteItem',
      'dynamodb:GetRecords',
      'dynamodb:DescribeStream',
      'states:DescribeExecution',
      'states:SendTaskHeartbeat',
      'secretsmanager:DescribeSecret',
    ]) {
      expect(text, action).not.toContain(`"${action}"`);
    }
  });

  it.each([
    ['STANDARD', readDefinition],
    ['EXPRESS', readExpressDefinition],
  ])('lets the %s state machine invoke exactly the functions its definition names, unqualified', (type, read) => {
    const machine = Object.values(template.findResources('AWS::StepFunctions::StateMachine')).find(
      (m) => m.Properties.StateMachineType === type,
    )!;
    const roleId = machine.Properties.RoleArn['Fn::GetAtt'][0];
    const statements = Object.values(template.findResources('AWS::IAM::Policy'))
      .filter((p) => p.Properties.Roles.some((r: { Ref: string }) => r.Ref === roleId))
      .flatMap((p) => p.Properties.PolicyDocument.Statement)
      .filter((s: { Action: string | string[] }) => [s.Action].flat().includes('lambda:InvokeFunction'));
    const resources = statements.flatMap((s: { Resource: unknown }) => [s.Resource].flat());
    expect(resources.every((r: any) => r['Fn::GetAtt']?.[1] === 'Arn')).toBe(true);
    expect(resources).toHaveLength(placeholdersIn(read()).length);
  });
});
