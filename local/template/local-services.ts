import { createHash, randomUUID } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';

/** One SNS publish, as the local topic received it. */
export interface PublishedMessage {
  topicArn: string;
  subject?: string;
  message: string;
  attributes: Record<string, string>;
  at: string;
}

export interface ServiceReply {
  status: number;
  contentType: string;
  body: string;
}

const json = (type: '1.0' | '1.1', status: number, body: unknown): ServiceReply => ({
  status,
  contentType: `application/x-amz-json-${type}`,
  body: JSON.stringify(body),
});

const xmlEscape = (s: string) => s.replace(/[<>&'"]/g, (c) => `&#${c.charCodeAt(0)};`);

/** SNS's query-protocol error document. */
export function snsError(status: number, code: string, message: string): ServiceReply {
  return {
    status,
    contentType: 'text/xml',
    body: `<ErrorResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/"><Error><Type>Sender</Type><Code>${code}</Code><Message>${xmlEscape(message)}</Message></Error><RequestId>${randomUUID()}</RequestId></ErrorResponse>`,
  };
}

/**
 * Secrets Manager's GetSecretValue for the stack's config secret, whose value is the local principals file
 * (read again whenever it changes: tests and operators edit it).
 */
export function secretsManager(secrets: { arn: string; name: string }[], configPath: string) {
  let cached: { version: string; text: string } | undefined;
  const read = async () => {
    const info = await stat(configPath);
    const version = `${info.mtimeMs}:${info.size}`;
    if (cached?.version !== version) cached = { version, text: await readFile(configPath, 'utf8') };
    return cached.text;
  };
  return {
    /** The secret an id names: its name, its full ARN, or its ARN without the random suffix. */
    find: (id: string) => secrets.find((s) => s.arn === id || s.name === id || s.arn.replace(/-[0-9a-f]{6}$/, '') === id),
    async handle(target: string, body: Record<string, unknown>): Promise<ServiceReply> {
      if (target !== 'GetSecretValue')
        return json('1.1', 400, { __type: 'InvalidRequestException', Message: `${target} is not served by the local Secrets Manager` });
      const secret = this.find(String(body.SecretId ?? ''));
      if (!secret)
        return json('1.1', 400, { __type: 'ResourceNotFoundException', Message: "Secrets Manager can't find the specified secret." });
      const text = await read();
      return json('1.1', 200, {
        ARN: secret.arn,
        Name: secret.name,
        SecretString: text,
        VersionId: createHash('sha256').update(text).digest('hex').slice(0, 32),
        VersionStages: ['AWSCURRENT'],
        CreatedDate: Math.floor(Date.now() / 1000),
      });
    },
  };
}

/** SNS's Publish for the stack's topics: each message recorded, and handed to `deliver` (the email outbox). */
export function snsTopics(topics: { arn: string }[], deliver: (message: PublishedMessage) => void = () => undefined) {
  const published: PublishedMessage[] = [];
  return {
    published,
    handle(form: URLSearchParams): ServiceReply {
      const action = form.get('Action');
      if (action !== 'Publish') return snsError(400, 'InvalidAction', `${action} is not served by the local SNS`);
      const topicArn = form.get('TopicArn') ?? form.get('TargetArn') ?? '';
      if (!topics.some((t) => t.arn === topicArn)) return snsError(404, 'NotFound', 'Topic does not exist');
      const attributes: Record<string, string> = {};
      for (let i = 1; form.has(`MessageAttributes.entry.${i}.Name`); i++)
        attributes[form.get(`MessageAttributes.entry.${i}.Name`)!] = form.get(`MessageAttributes.entry.${i}.Value.StringValue`) ?? '';
      const message = {
        topicArn,
        subject: form.get('Subject') ?? undefined,
        message: form.get('Message') ?? '',
        attributes,
        at: new Date().toISOString(),
      };
      published.push(message);
      deliver(message);
      const id = randomUUID();
      return {
        status: 200,
        contentType: 'text/xml',
        body: `<PublishResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/"><PublishResult><MessageId>${id}</MessageId></PublishResult><ResponseMetadata><RequestId>${randomUUID()}</RequestId></ResponseMetadata></PublishResponse>`,
      };
    },
  };
}
