import type { StackAssembly } from './assembly';
import { type AlarmChange, AlarmEvaluator, type AlarmState, bindAlarms, MetricStore } from './alarms';
import type { EmailOutbox } from './email-outbox';
import type { IamCheck } from './iam';
import type { PublishedMessage } from './local-services';
import type { LocalPlacement, PolicyDocument, StackModel } from './stack-model';

/** What an AWS managed key (`alias/aws/sns`) allows: principals of the account, through SNS only. No service principal. */
function managedKeyPolicy(account: string, region: string): PolicyDocument {
  return {
    Version: '2012-10-17',
    Statement: [
      {
        Effect: 'Allow',
        Principal: { AWS: '*' },
        Action: ['kms:Encrypt', 'kms:Decrypt', 'kms:ReEncrypt*', 'kms:GenerateDataKey*', 'kms:CreateGrant', 'kms:DescribeKey'],
        Resource: '*',
        Condition: { StringEquals: { 'kms:CallerAccount': account, 'kms:ViaService': `sns.${region}.amazonaws.com` } },
      },
      {
        Effect: 'Allow',
        Principal: { AWS: `arn:aws:iam::${account}:root` },
        Action: ['kms:Describe*', 'kms:Get*', 'kms:List*'],
        Resource: '*',
      },
    ],
  };
}

/** The stack's CloudWatch as its alarms need it: metrics in, alarm states, and what their actions did. */
export interface LocalCloudWatch {
  metrics: MetricStore;
  /** Evaluates every alarm now (tests call it rather than wait for the next tick). */
  evaluate(): Promise<void>;
  /** Each alarm's and composite alarm's state, by name. */
  states: ReadonlyMap<string, AlarmState>;
  /** Every state change, in order, and what its actions did. */
  history: (AlarmChange & { published: string[]; refused: string[] })[];
  /** Where email subscriptions' messages are written. */
  outbox: string;
  /** A function's invocation that began at `began` ended: Lambda's own metrics for it, timed at its start. */
  invoked(functionName: string, outcome: 'ok' | 'error' | 'throttled', durationMs: number, began: number): void;
  /** Lambda dropped an asynchronous event of the function. */
  asyncDropped(functionName: string): void;
  /** A line a function wrote to its log group: EMF documents and metric filters. */
  logged(logGroupName: string, line: string): void;
}

/** The region's name as CloudWatch writes it in an alarm email's subject. */
const REGION_NAMES: Record<string, string> = {
  'us-east-1': 'US East (N. Virginia)',
  'us-west-2': 'US West (Oregon)',
  'eu-west-1': 'Europe (Ireland)',
  'eu-central-1': 'Europe (Frankfurt)',
};

/** CloudWatch's alarm notification: its subject, the JSON message, and the text SNS's email protocol sends. */
export function alarmNotification(change: AlarmChange, account: string, region: string): { subject: string; json: string; email: string } {
  const where = REGION_NAMES[region] ?? region;
  const subject = `${change.to}: "${change.alarm.name}" in ${where}`;
  const json = JSON.stringify({
    AlarmName: change.alarm.name,
    AlarmDescription: change.alarm.description ?? null,
    AWSAccountId: account,
    NewStateValue: change.to,
    NewStateReason: change.reason,
    StateChangeTime: change.at,
    Region: where,
    AlarmArn: change.alarm.arn,
    OldStateValue: change.from,
  });
  const email = [
    `You are receiving this email because your Amazon CloudWatch Alarm "${change.alarm.name}" in the ${where} region has entered the ${change.to} state, because "${change.reason}" at "${change.at}".`,
    '',
    'Alarm Details:',
    `- Name:                       ${change.alarm.name}`,
    `- Description:                ${change.alarm.description ?? ''}`,
    `- State Change:               ${change.from} -> ${change.to}`,
    `- Reason for State Change:    ${change.reason}`,
    `- Timestamp:                  ${change.at}`,
    `- AWS Account:                ${account}`,
    `- Alarm Arn:                  ${change.alarm.arn}`,
  ].join('\n');
  return { subject: subject.slice(0, 100), json, email };
}

/**
 * Starts the template's alarms: metrics from the functions' EMF lines, Lambda's per-function metrics and the
 * log metric filters; evaluated every tick (a fifth of the shortest period, scaled) and on demand; each action
 * published as `cloudwatch.amazonaws.com` through the topic's policy and its key's policy (the IAM check), and
 * delivered to the topic's confirmed email subscriptions (the outbox).
 */
export async function startCloudWatch(options: {
  assembly: StackAssembly;
  placement: LocalPlacement;
  model: StackModel;
  iam: IamCheck;
  /** A period of P seconds lasts P / timeScale real seconds. */
  timeScale: number;
  published: PublishedMessage[];
  outbox: EmailOutbox;
  log(line: string): void;
}): Promise<LocalCloudWatch & { close(): Promise<void> }> {
  const { model, iam, timeScale, log } = options;
  const { alarms, composites, filters } = bindAlarms(options.assembly, options.placement);
  const metrics = new MetricStore(AlarmEvaluator.lookBackMs(alarms, timeScale));
  const history: LocalCloudWatch['history'] = [];
  const pending: Promise<void>[] = [];

  const publish = async (change: AlarmChange, topicArn: string): Promise<string | undefined> => {
    const topic = model.topics.find((t) => t.arn === topicArn);
    if (!topic) return `topic ${topicArn} does not exist`;
    const context = { 'aws:SourceAccount': model.account, 'aws:SourceArn': change.alarm.arn };
    const topicDecision = await iam.authorizeService('cloudwatch.amazonaws.com', 'sns:Publish', topicArn, context);
    if (!topicDecision.allowed) return topicDecision.message;
    if (topic.kmsMasterKeyId) {
      // An encrypted topic: the publisher must be able to use its key (SNS asks KMS on its behalf).
      const managed = /alias\/aws\//.test(topic.kmsMasterKeyId);
      const keyArn = managed
        ? `arn:aws:kms:${model.region}:${model.account}:key/aws-managed-${topic.kmsMasterKeyId.replace(/^.*alias\//, '').replace(/\W/g, '-')}`
        : topic.kmsMasterKeyId;
      const policy = managed ? managedKeyPolicy(model.account, model.region) : undefined;
      for (const action of ['kms:GenerateDataKey', 'kms:Decrypt']) {
        const decision = await iam.authorizeService('cloudwatch.amazonaws.com', action, keyArn, context, policy);
        if (!decision.allowed) return `${decision.message} (topic ${topicArn} is encrypted with ${topic.kmsMasterKeyId})`;
      }
    }
    const notification = alarmNotification(change, model.account, model.region);
    options.published.push({ topicArn, subject: notification.subject, message: notification.json, attributes: {}, at: change.at });
    options.outbox.deliver({ topicArn, subject: notification.subject, text: notification.email, attributes: {} });
    return undefined;
  };

  const onChange = (change: AlarmChange) => {
    const entry = { ...change, published: [] as string[], refused: [] as string[] };
    history.push(entry);
    log(`cloudwatch: ${change.alarm.name} ${change.from} -> ${change.to}`);
    for (const action of change.actions) {
      if (!action.startsWith('arn:aws:sns:')) continue;
      pending.push(
        publish(change, action).then((refusal) => {
          if (refusal === undefined) entry.published.push(action);
          else {
            entry.refused.push(action);
            log(`cloudwatch: ${change.alarm.name}: failed to execute action ${action}: ${refusal}`);
          }
        }),
      );
    }
  };
  const evaluator = new AlarmEvaluator(alarms, composites, metrics, timeScale, onChange);
  const evaluate = async () => {
    evaluator.evaluate();
    await Promise.all(pending.splice(0));
  };
  const shortest = Math.min(...alarms.map((a) => a.periodSeconds), 3600);
  const timer = setInterval(
    () => void evaluate().catch((e: Error) => log(`cloudwatch: ${e.message}`)),
    Math.max(200, (shortest * 1000) / timeScale / 5),
  );
  timer.unref();

  const byLogGroup = new Map<string, typeof filters>();
  for (const f of filters) byLogGroup.set(f.logGroupName, [...(byLogGroup.get(f.logGroupName) ?? []), f]);
  return {
    metrics,
    evaluate,
    states: evaluator.states,
    history,
    outbox: options.outbox.dir,
    invoked(functionName, outcome, durationMs, began) {
      const dims = { FunctionName: functionName };
      if (outcome === 'throttled') return metrics.put('AWS/Lambda', 'Throttles', dims, 1, began);
      metrics.put('AWS/Lambda', 'Invocations', dims, 1, began);
      metrics.put('AWS/Lambda', 'Errors', dims, outcome === 'error' ? 1 : 0, began);
      metrics.put('AWS/Lambda', 'Duration', dims, durationMs, began);
    },
    asyncDropped(functionName) {
      metrics.put('AWS/Lambda', 'AsyncEventsDropped', { FunctionName: functionName }, 1);
    },
    logged(logGroupName, line) {
      metrics.putEmfLine(line);
      for (const f of byLogGroup.get(logGroupName) ?? []) {
        if (!line.includes(f.value)) continue;
        try {
          const doc = JSON.parse(line.slice(line.indexOf('{')));
          const value = f.field.split('.').reduce<unknown>((v, k) => (v as Record<string, unknown> | undefined)?.[k], doc);
          if (value === f.value) metrics.put(f.namespace, f.name, {}, f.metricValue);
        } catch {
          // Not JSON: a filter on a JSON field does not match it.
        }
      }
    },
    async close() {
      clearInterval(timer);
      await Promise.all(pending.splice(0));
    },
  };
}
