import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { DEMO_TOOLS_ENTRY } from '../../infra/bundling';
import { ToolRunner, type ToolRunnerProps } from '../../infra/tool-runner';
import type { CfnTemplate } from '../../local/template/assembly';
import { generatedSecretValue, referencesOf, regeneratedSecrets, updateOrder } from '../../local/template/redeploy';
import { seeded } from '../../local/seeded';

/** The construct's template for these props (bundling skipped: the update rules read properties, not code). */
function templateOf(props: Partial<ToolRunnerProps> = {}): CfnTemplate {
  const stack = new Stack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), 'Update');
  new ToolRunner(stack, 'Runner', { tools: { entry: DEMO_TOOLS_ENTRY() }, ...props });
  return Template.fromStack(stack).toJSON() as CfnTemplate;
}
const idOf = (template: CfnTemplate, type: string, prefix: string) =>
  Object.keys(template.Resources).find((id) => template.Resources[id].Type === type && id.startsWith(prefix))!;

describe('template mode applies an update as CloudFormation does', () => {
  const before = templateOf();

  it('keeps the config secret through a prop change that leaves its GenerateSecretString alone (the Api memory)', () => {
    expect(regeneratedSecrets(before, templateOf({ apiMemoryMb: 512 }))).toEqual([]);
  });

  it('regenerates a secret whose GenerateSecretString changed, and only that one', () => {
    const after = structuredClone(before);
    const secret = idOf(after, 'AWS::SecretsManager::Secret', 'RunnerConfig');
    const generate = after.Resources[secret].Properties!.GenerateSecretString as { SecretStringTemplate: string };
    generate.SecretStringTemplate = JSON.stringify({ ...JSON.parse(generate.SecretStringTemplate), approvalTtlSeconds: 60 });
    expect(regeneratedSecrets(before, after)).toEqual([secret]);
    // A description is not the value: kept.
    const described = structuredClone(before);
    described.Resources[secret].Properties!.Description = 'another description';
    expect(regeneratedSecrets(before, described)).toEqual([]);
  });

  it('generates a new value from the template and the generation rules', () => {
    const properties = {
      GenerateSecretString: { SecretStringTemplate: '{"a":1}', GenerateStringKey: 'k', PasswordLength: 48, ExcludePunctuation: true },
    };
    const one = JSON.parse(generatedSecretValue(properties));
    const two = JSON.parse(generatedSecretValue(properties));
    expect(one).toMatchObject({ a: 1, k: expect.stringMatching(/^[A-Za-z0-9]{48}$/) });
    expect(two.k).not.toBe(one.k);
  });

  it('orders the functions after what they refer to, the rest by the seed', () => {
    const functions = Object.keys(before.Resources).filter((id) => before.Resources[id].Type === 'AWS::Lambda::Function');
    const tools = idOf(before, 'AWS::Lambda::Function', 'RunnerToolsFunction');
    // What names Tools: the function, and its versions (callers invoke the version deployed with them).
    const namesTools = new Set([
      tools,
      ...Object.keys(before.Resources).filter(
        (id) => before.Resources[id].Type === 'AWS::Lambda::Version' && referencesOf(before.Resources[id]).has(tools),
      ),
    ]);
    const callers = functions.filter((id) => [...referencesOf(before.Resources[id])].some((ref) => namesTools.has(ref)));
    // Api, Execute and Reconcile invoke Tools: their environment and policies name it.
    expect(callers.map((id) => id.replace(/^Runner(.*)Function.*$/, '$1')).sort()).toEqual(['Api', 'Execute', 'Reconcile']);
    const orders = [1, 2, 3, 4, 5].map((seed) => updateOrder(before, functions, seeded(seed)));
    for (const order of orders) {
      expect([...order].sort()).toEqual([...functions].sort());
      for (const caller of callers) expect(order.indexOf(tools)).toBeLessThan(order.indexOf(caller));
    }
    expect(updateOrder(before, functions, seeded(1))).toEqual(orders[0]);
    expect(new Set(orders.map((o) => o.join())).size).toBeGreaterThan(1);
  });
});
