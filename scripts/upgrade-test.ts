/**
 * `npm run test:upgrade [-- --update]`: what a routine `cdk deploy` of a change would do to a running stack.
 * Synthesizes the construct with bundling skipped before and after each change (a prop change, a tool added and
 * one removed, and the committed baseline against today's synthesis), diffs the templates with
 * `@aws-cdk/cloudformation-diff`'s `fullDiff`, and fails on a replacement, deletion or orphaning of a resource that
 * holds state, and on any change under a secret's `GenerateSecretString` (CloudFormation generates a new value,
 * though the diff calls it an update). `--update` rewrites the baseline from today's synthesis.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { App, Stack } from 'aws-cdk-lib';
import { ToolRunner, type ToolRunnerProps } from '../infra/tool-runner';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const fixtures = join(root, 'test/fixtures/upgrade');
export const BASELINE = join(fixtures, 'baseline.template.json');

type Template = { Resources?: Record<string, { Type: string; Properties?: Record<string, unknown> }> };

/** The part of `@aws-cdk/cloudformation-diff` (2.187) this test uses, as its typings declare it. */
interface CloudFormationDiff {
  fullDiff(
    current: Template,
    next: Template,
  ): {
    resources: {
      forEachDifference(
        cb: (
          logicalId: string,
          change: {
            changeImpact: string;
            oldResourceType?: string;
            newResourceType?: string;
            oldValue?: { Properties?: Record<string, unknown> };
            newValue?: { Properties?: Record<string, unknown> };
          },
        ) => void,
      ): void;
    };
  };
}
// Resolved through require, so NODE_PATH can point at a copy outside the shared node_modules.
const cfnDiff = () => createRequire(import.meta.url)('@aws-cdk/cloudformation-diff') as CloudFormationDiff;

/** Impacts that lose what a resource holds. */
const LOSING = new Set(['WILL_REPLACE', 'MAY_REPLACE', 'WILL_DESTROY', 'WILL_ORPHAN']);

/** Resources whose loss loses data, keys or executions in flight. */
function holdsState(type: string | undefined, properties: Record<string, unknown> | undefined): boolean {
  if (type === 'AWS::StepFunctions::StateMachine') return properties?.StateMachineName !== undefined;
  return (
    type === 'AWS::DynamoDB::Table' ||
    type === 'AWS::DynamoDB::GlobalTable' ||
    type === 'AWS::S3::Bucket' ||
    type === 'AWS::Cognito::UserPool' ||
    type === 'AWS::SecretsManager::Secret'
  );
}

/** What the change would do that it must not, one line each (none: the update keeps what it must). */
export function upgradeFindings(before: Template, after: Template, diff: CloudFormationDiff = cfnDiff()): string[] {
  const findings: string[] = [];
  diff.fullDiff(before, after).resources.forEachDifference((id, change) => {
    const type = change.oldResourceType ?? change.newResourceType;
    if (LOSING.has(change.changeImpact) && holdsState(type, change.oldValue?.Properties))
      findings.push(`${id} (${type}): ${change.changeImpact}`);
    if (type === 'AWS::SecretsManager::Secret' && change.oldValue && change.newValue) {
      const was = JSON.stringify(change.oldValue.Properties?.GenerateSecretString);
      const now = JSON.stringify(change.newValue.Properties?.GenerateSecretString);
      if (was !== now) findings.push(`${id} (${type}): GenerateSecretString changed (a new secret value): ${was} -> ${now}`);
    }
  });
  return findings;
}

/** The stack `cdk synth` would build with these props, without esbuild. */
export function synthesize(props: Omit<ToolRunnerProps, 'tools'> & { tools?: ToolRunnerProps['tools'] }): Template {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new Stack(app, 'Upgrade', { env: { account: '123456789012', region: 'eu-west-1' } });
  new ToolRunner(stack, 'Runner', { tools: { entry: join(fixtures, 'tools-before.ts') }, ...props });
  return app.synth().getStackByName('Upgrade').template as Template;
}

const agent = { id: 'agent', keySha256: 'a'.repeat(64), roles: ['agent' as const], tools: '*' as const };
const approver = { id: 'approver', keySha256: 'b'.repeat(64), roles: ['approver' as const], tools: '*' as const };

/** The baseline's props: the construct owns the principals document. */
export const BASE_PROPS = { principals: [agent], approvalTtlSeconds: 86400 } satisfies Omit<ToolRunnerProps, 'tools'>;

/** Each change, as the props before and after. */
export const CHANGES: { name: string; before: Parameters<typeof synthesize>[0]; after: Parameters<typeof synthesize>[0] }[] = [
  {
    name: 'a prop change (principals, approvalTtlSeconds, memory)',
    before: BASE_PROPS,
    after: { principals: [agent, approver], approvalTtlSeconds: 3600, apiMemoryMb: 512 },
  },
  { name: 'approvalTtlSeconds without principals (the operator owns them)', before: {}, after: { approvalTtlSeconds: 3600 } },
  {
    name: 'a tool added and one removed',
    before: BASE_PROPS,
    after: { ...BASE_PROPS, tools: { entry: join(fixtures, 'tools-after.ts') } },
  },
];

function main(): void {
  const update = process.argv.includes('--update');
  const today = synthesize(BASE_PROPS);
  if (update) {
    writeFileSync(BASELINE, `${JSON.stringify(today, null, 2)}\n`);
    console.log(`wrote ${BASELINE}`);
  }
  let failed = 0;
  const report = (name: string, findings: string[]) => {
    console.log(`${findings.length ? 'FAIL' : 'ok  '} ${name}${findings.length ? '' : ': keeps what it must'}`);
    for (const finding of findings) console.log(`       ${finding}`);
    failed += findings.length ? 1 : 0;
  };
  report('the committed baseline -> today', upgradeFindings(JSON.parse(readFileSync(BASELINE, 'utf8')) as Template, today));
  for (const change of CHANGES) report(change.name, upgradeFindings(synthesize(change.before), synthesize(change.after)));
  console.log(`${CHANGES.length + 1 - failed} passed, ${failed} failed`);
  process.exitCode = failed ? 1 : 0;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) main();
