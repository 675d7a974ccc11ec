import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CfnTemplate } from '../../local/template/assembly';
import { unknownOutcomeEmail } from '../support/scenarios';
import { startTestStack, type TestStack } from '../support/stack';
import { handlerMode } from '../support/target';

type Resource = { Type: string; Properties: Record<string, any> };
const ONCALL = 'oncall@example.com';
/** A 5-minute period lasts 2 s: the alarms' own settings (2 of 2 periods…) then take seconds, not minutes. */
const TIME_SCALE = 150;

/** The alarms topic: the composite Critical alarm's action. */
function alarmsTopicId(template: CfnTemplate): string {
  const composite = Object.values(template.Resources).find((r) => r.Type === 'AWS::CloudWatch::CompositeAlarm') as Resource;
  return composite.Properties.AlarmActions[0].Ref;
}

/** The template as `alarmEmails: ['oncall@example.com']` synthesizes it: an email subscription of the alarms topic. */
function subscribeOnCall(template: CfnTemplate): void {
  template.Resources.OnCallSubscription = {
    Type: 'AWS::SNS::Subscription',
    Properties: { Protocol: 'email', TopicArn: { Ref: alarmsTopicId(template) }, Endpoint: ONCALL },
  } as never;
}

const outbox = (stack: TestStack) => readdirSync(join(stack.dataDir, 'outbox')).sort();
const read = (stack: TestStack, file: string) => readFileSync(join(stack.dataDir, 'outbox', file), 'utf8');

/** Waits for `check` to hold, evaluating the alarms each time rather than waiting for their next tick. */
async function until<T>(what: string, stack: TestStack, check: () => T | undefined, timeoutMs = 90_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    await stack.alarms!.evaluate();
    const found = check();
    if (found) return found;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

describe.runIf(handlerMode === 'template')(
  'alarms reach a person: evaluated from what the functions emit, mailed after confirmation',
  () => {
    let stack: TestStack;
    beforeAll(async () => {
      stack = await startTestStack({ alarmTimeScale: TIME_SCALE, editTemplate: subscribeOnCall });
    });
    afterAll(async () => stack?.stop());

    it('mails the confirmation request first, and delivers nothing the alarms publish until it is confirmed', async () => {
      const [first, ...rest] = outbox(stack);
      expect(rest).toEqual([]);
      expect(first).toMatch(/^0001-confirmation-oncall@example\.com\.eml$/);
      const confirmation = read(stack, first);
      expect(confirmation).toContain('Subject: AWS Notification - Subscription Confirmation');
      // The Critical alarms and the composite go from INSUFFICIENT_DATA to OK and publish (their OK actions).
      const published = await until('a Critical alarm to publish', stack, () => stack.alarms!.history.find((h) => h.published.length > 0));
      expect(published.to).toBe('OK');
      expect(stack.published!.some((m) => m.subject?.startsWith('OK: '))).toBe(true);
      // Published through the topic's and its key's policies, refused nowhere, and delivered to nobody yet.
      expect(stack.alarms!.history.flatMap((h) => h.refused)).toEqual([]);
      expect(outbox(stack)).toEqual([first]);
    });

    it('an unknown outcome left waiting for a reviewer fires its Critical alarm, and the email is in the outbox', async () => {
      const [confirmationFile] = outbox(stack);
      const link = /Confirm subscription: (\S+)/.exec(read(stack, confirmationFile))![1];
      const confirmed = await fetch(link);
      expect(confirmed.status).toBe(200);

      const { res } = await unknownOutcomeEmail(stack);
      expect(res.body).toMatchObject({ status: 'outcome_unknown' });
      const file = await until('the alarm email', stack, () =>
        outbox(stack).find(
          (f) => f.includes('-message-') && read(stack, f).includes('-ReviewsOpen" in') && read(stack, f).includes('Subject: ALARM'),
        ),
      );
      const email = read(stack, file);
      console.log(`the outbox's first alarm email (${file}):\n${email}`);
      expect(email).toContain(`To: ${ONCALL}`);
      expect(email).toMatch(/Subject: ALARM: ".*-ReviewsOpen" in US East \(N\. Virginia\)/);
      expect(email).toContain('- State Change:               OK -> ALARM');
      expect(email).toContain('Critical: Calls whose effect is unknown wait for a reviewer');
      // 2 of 2 periods of the sweeper's ReviewsOpen gauge (an EMF line of the Sweeper function) at 1 or more.
      expect(email).toMatch(/Threshold Crossed: 2 out of the last 2 datapoints \[1, 1\]/);
      expect(stack.alarms!.states.get([...stack.alarms!.states.keys()].find((k) => k.endsWith('-Critical'))!)).toBe('ALARM');
      // Nothing was refused on the way: the topic policy let cloudwatch.amazonaws.com publish, the key policy let it encrypt.
      expect(stack.alarms!.history.flatMap((h) => h.refused)).toEqual([]);
    });
  },
);

describe.runIf(handlerMode === 'template')('an alarms topic on the AWS managed key alias/aws/sns', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({
      alarmTimeScale: TIME_SCALE,
      editTemplate: (template) => {
        subscribeOnCall(template);
        (template.Resources[alarmsTopicId(template)] as Resource).Properties.KmsMasterKeyId = 'alias/aws/sns';
      },
    });
  });
  afterAll(async () => stack?.stop());

  it('CloudWatch cannot use its key: every publication is refused and nothing reaches the confirmed address', async () => {
    const [confirmationFile] = outbox(stack);
    const link = /Confirm subscription: (\S+)/.exec(read(stack, confirmationFile))![1];
    expect((await fetch(link)).status).toBe(200);
    const refused = await until('a publication to be refused', stack, () => stack.alarms!.history.find((h) => h.refused.length > 0));
    expect(refused.published).toEqual([]);
    expect(stack.alarms!.history.flatMap((h) => h.published)).toEqual([]);
    expect(outbox(stack)).toEqual([confirmationFile]);
  });
});
