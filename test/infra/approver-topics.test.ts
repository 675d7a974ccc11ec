import { App, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import { describe, expect, it } from 'vitest';
import { DEMO_TOOLS_ENTRY } from '../../infra/bundling';
import { FUNCTIONS, type FunctionName } from '../../infra/functions';
import { nagPacks } from '../../infra/nag';
import { ToolRunner } from '../../infra/tool-runner';

/**
 * The two topics: approval links reach only the approvers the construct subscribes (each filtered on its
 * `approverId`, nobody else may subscribe), link-free notices anyone may follow. Read from the template.
 */
function synth(approvers: ConstructorParameters<typeof ToolRunner>[2]['approvers']) {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new Stack(app, 'Approvers', { env: { account: '123456789012', region: 'eu-west-1' } });
  const runner = new ToolRunner(stack, 'Runner', {
    tools: { entry: DEMO_TOOLS_ENTRY() },
    approvers: approvers ?? [
      { id: 'alice', email: 'alice@example.com' },
      // Its own filter policy is replaced by the one on approverId.
      {
        id: 'bob',
        subscription: new subscriptions.UrlSubscription('https://hooks.example.com/bob', {
          filterPolicy: { approverId: sns.SubscriptionFilter.stringFilter({ allowlist: ['alice'] }) },
        }),
      },
    ],
  });
  return { app, stack, runner, template: Template.fromStack(stack) };
}

describe('approval links and notices on AWS', () => {
  const { app, stack, runner, template } = synth(undefined);
  const linksId = stack.getLogicalId(runner.approvalTopic.node.defaultChild as never);
  const noticesId = stack.getLogicalId(runner.noticesTopic.node.defaultChild as never);

  it('subscribes each approver to the links topic with a filter policy on its own approverId, and nothing else', () => {
    const subs = Object.values(template.findResources('AWS::SNS::Subscription'));
    expect(subs.map((s) => s.Properties.TopicArn)).toEqual([{ Ref: linksId }, { Ref: linksId }]);
    expect(subs.map((s) => [s.Properties.Protocol, s.Properties.Endpoint, s.Properties.FilterPolicy])).toEqual([
      ['email', 'alice@example.com', { approverId: ['alice'] }],
      ['https', 'https://hooks.example.com/bob', { approverId: ['bob'] }],
    ]);
    // Filtered on the message attribute the runner sets (adapters/notifier.ts), not on the body.
    for (const s of subs) expect(s.Properties.FilterPolicyScope ?? 'MessageAttributes').toBe('MessageAttributes');
  });

  it('refuses every other sns:Subscribe to the links topic: only CloudFormation (the construct) subscribes', () => {
    template.hasResourceProperties('AWS::SNS::TopicPolicy', {
      Topics: [{ Ref: linksId }],
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Sid: 'OnlyTheConstructsApproversSubscribe',
            Effect: 'Deny',
            Principal: { AWS: '*' },
            Action: 'sns:Subscribe',
            Resource: { Ref: linksId },
            Condition: { 'ForAllValues:StringNotEquals': { 'aws:CalledVia': ['cloudformation.amazonaws.com'] } },
          }),
        ]),
      },
    });
    // The notices topic is link-free: anyone the account allows may subscribe (TLS only, as both topics).
    const noticesPolicies = Object.values(template.findResources('AWS::SNS::TopicPolicy')).filter((p) =>
      JSON.stringify(p.Properties.Topics).includes(noticesId),
    );
    expect(noticesPolicies).toHaveLength(1);
    expect(JSON.stringify(noticesPolicies[0])).not.toContain('sns:Subscribe');
    expect(JSON.stringify(noticesPolicies[0])).toContain('aws:SecureTransport');
  });

  it('names both topics to every function of the runner (none to Tools), and lets only RequestApproval publish links', () => {
    const functions = template.findResources('AWS::Lambda::Function');
    const policies = Object.values(template.findResources('AWS::IAM::Policy'));
    for (const name of Object.keys(FUNCTIONS) as FunctionName[]) {
      const [fn] = Object.entries(functions)
        .filter(([id]) => id.startsWith(`Runner${name}Function`))
        .map(([, f]) => f);
      // Tool code's function knows no topic (nor any other resource of the runner).
      if (name === 'Tools') expect(Object.keys(fn.Properties.Environment.Variables)).not.toContain('NOTICES_TOPIC_ARN');
      else
        expect(fn.Properties.Environment.Variables).toMatchObject({
          APPROVAL_TOPIC_ARN: { Ref: linksId },
          NOTICES_TOPIC_ARN: { Ref: noticesId },
        });
      const roleId = fn.Properties.Role['Fn::GetAtt'][0] as string;
      const publishesTo = policies
        .filter((p) => p.Properties.Roles.some((r: { Ref: string }) => r.Ref === roleId))
        .flatMap((p) => p.Properties.PolicyDocument.Statement)
        .filter((st: { Action: string | string[] }) => [st.Action].flat().includes('sns:Publish'))
        .flatMap((st: { Resource: unknown }) => [st.Resource].flat())
        .map((r) => (r as { Ref: string }).Ref)
        .map((ref) => (ref === linksId ? 'links' : ref === noticesId ? 'notices' : String(ref)))
        .sort();
      const ports = FUNCTIONS[name].ports as readonly string[];
      expect(publishesTo, name).toEqual([
        ...(ports.includes('notifyLinks') ? ['links'] : []),
        ...(ports.includes('notifyNotices') ? ['notices'] : []),
      ]);
    }
    expect(FUNCTIONS.RequestApproval.ports).toContain('notifyLinks');
    // The sweeper sends the approvalEscalation steps' links (steps/escalation.ts).
    expect(
      Object.entries(FUNCTIONS)
        .filter(([, f]) => (f.ports as readonly string[]).includes('notifyLinks'))
        .map(([n]) => n),
    ).toEqual(['RequestApproval', 'Sweeper']);
  });

  it('passes cdk-nag with approvers subscribed', () => {
    const findings = nagPacks(app).flatMap((pack) =>
      pack.validateScope(app).violations.map((v) => `${v.ruleName}: ${v.violatingResources.map((r) => r.resourceLogicalId).join(', ')}`),
    );
    expect(findings).toEqual([]);
  });

  it('refuses an approver with no channel or two', () => {
    expect(() => synth([{ id: 'alice' }])).toThrow(/exactly one of email and subscription/);
    expect(() =>
      synth([{ id: 'alice', email: 'a@example.com', subscription: new subscriptions.UrlSubscription('https://hooks.example.com/a') }]),
    ).toThrow(/exactly one of email and subscription/);
  });

  it('creates no subscription without approvers', () => {
    const { template: bare } = synth([]);
    bare.resourceCountIs('AWS::SNS::Subscription', 0);
    // Links, notices, and the alarms topic.
    bare.resourceCountIs('AWS::SNS::Topic', 3);
  });
});
