import { Validations } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';
import { describe, expect, it, vi } from 'vitest';
import { nagPacks } from '../../infra/nag';
import { synthDemo } from '../support/synth';

function constructs(root: IConstruct): IConstruct[] {
  return [root, ...root.node.children.flatMap(constructs)];
}

describe('cdk-nag on the synthesized app', () => {
  const { app, stack } = synthDemo();

  it('finds no unacknowledged error or warning in the AwsSolutions and Serverless packs', () => {
    const findings = nagPacks(app).flatMap((pack) =>
      pack.validateScope(app).violations.map((v) => `${v.ruleName}: ${v.violatingResources.map((r) => r.resourceLogicalId).join(', ')}`),
    );
    expect(findings).toEqual([]);
  });

  it('gives every acknowledged finding a reason', () => {
    // Each acknowledgement is recorded as metadata { [ruleId]: reason } on the construct it applies to.
    const acknowledgements = constructs(stack).flatMap((c) =>
      c.node.metadata
        .filter((m) => m.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
        .flatMap((m) => Object.entries(m.data as Record<string, string>)),
    );
    expect(acknowledgements.length).toBeGreaterThan(10);
    for (const [id, reason] of acknowledgements) expect(reason?.trim().length ?? 0, id).toBeGreaterThanOrEqual(40);
  });

  it('would catch a finding: a pack run on a stack without the acknowledgements reports them', () => {
    const skip = vi.spyOn(Validations.prototype, 'acknowledge').mockImplementation(() => undefined);
    const bare = synthDemo();
    skip.mockRestore();
    const rules = new Set(
      nagPacks(bare.app).flatMap((p) => p.validateScope(bare.app).violations.map((v) => v.ruleName.replace(/\[.*$/, ''))),
    );
    expect([...rules]).toEqual(expect.arrayContaining(['AwsSolutions-IAM5', 'AwsSolutions-SMG4', 'Serverless-LambdaDLQ']));
  });
});
