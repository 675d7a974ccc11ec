import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';

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

/** A template's `GenerateSecretString`, as Secrets Manager applies it when it creates the secret. */
export interface SecretGenerator {
  SecretStringTemplate?: string;
  GenerateStringKey?: string;
  PasswordLength?: number;
  ExcludePunctuation?: boolean;
}

/** A secret of the template: its ARN and name, and how CloudFormation fills it when it creates it. */
export interface LocalSecret {
  arn: string;
  name: string;
  generate?: SecretGenerator;
}

type Version = { id: string; text: string; stages: string[] };

const PUNCTUATION = '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~';
const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** A value as `GenerateSecretString` makes one: a random password, alone or under `GenerateStringKey` in the template. */
export function generatedSecret(g: SecretGenerator = {}): string {
  const alphabet = g.ExcludePunctuation ? ALPHANUMERIC : ALPHANUMERIC + PUNCTUATION;
  const bytes = randomBytes(g.PasswordLength ?? 32);
  const password = [...bytes].map((b) => alphabet[b % alphabet.length]).join('');
  if (!g.SecretStringTemplate || !g.GenerateStringKey) return password;
  return JSON.stringify({ ...JSON.parse(g.SecretStringTemplate), [g.GenerateStringKey]: password });
}

const notFound = (message: string) => json('1.1', 400, { __type: 'ResourceNotFoundException', Message: message });

/**
 * Secrets Manager's GetSecretValue and PutSecretValue for the template's secrets. The principals documents
 * (`fileBacked`; all of them when not given) are the local principals file, read again whenever it changes
 * (tests and operators edit it): one version, `AWSCURRENT`. Any other secret lives in `storeDir` with its
 * versions and staging labels, its first value generated from its `GenerateSecretString` as CloudFormation's
 * create would, and kept across restarts as a deployed secret is.
 */
export function secretsManager(
  secrets: LocalSecret[],
  configPath: string,
  options: { fileBacked?: ReadonlySet<string>; storeDir?: string } = {},
) {
  let cached: { version: string; text: string } | undefined;
  const read = async () => {
    const info = await stat(configPath);
    const version = `${info.mtimeMs}:${info.size}`;
    if (cached?.version !== version) cached = { version, text: await readFile(configPath, 'utf8') };
    return cached.text;
  };
  const isFile = (secret: LocalSecret) => !options.fileBacked || options.fileBacked.has(secret.arn);
  const storeOf = (secret: LocalSecret) => join(options.storeDir ?? dirname(configPath), `secret-${secret.name}.json`);
  const versionsOf = (secret: LocalSecret): Version[] => {
    const file = storeOf(secret);
    if (existsSync(file)) return (JSON.parse(readFileSync(file, 'utf8')) as { versions: Version[] }).versions;
    const versions = [{ id: randomUUID(), text: generatedSecret(secret.generate), stages: ['AWSCURRENT'] }];
    save(secret, versions);
    return versions;
  };
  const save = (secret: LocalSecret, versions: Version[]) => {
    mkdirSync(dirname(storeOf(secret)), { recursive: true });
    const file = storeOf(secret);
    writeFileSync(`${file}.tmp`, JSON.stringify({ versions }));
    renameSync(`${file}.tmp`, file);
  };
  return {
    /** The secret an id names: its name, its full ARN, or its ARN without the random suffix. */
    find: (id: string) => secrets.find((s) => s.arn === id || s.name === id || s.arn.replace(/-[0-9A-Za-z]{6}$/, '') === id),
    async handle(target: string, body: Record<string, unknown>): Promise<ServiceReply> {
      if (target !== 'GetSecretValue' && target !== 'PutSecretValue')
        return json('1.1', 400, { __type: 'InvalidRequestException', Message: `${target} is not served by the local Secrets Manager` });
      const secret = this.find(String(body.SecretId ?? ''));
      if (!secret) return notFound("Secrets Manager can't find the specified secret.");
      const stage = String(body.VersionStage ?? 'AWSCURRENT');
      if (target === 'PutSecretValue') {
        if (isFile(secret))
          return json('1.1', 400, {
            __type: 'InvalidRequestException',
            Message: `the local principals document is the file ${configPath}`,
          });
        const versions = versionsOf(secret);
        const token = typeof body.ClientRequestToken === 'string' ? body.ClientRequestToken : randomUUID();
        // The same token again stores nothing new (Secrets Manager's idempotency).
        const same = versions.find((v) => v.id === token);
        if (!same) {
          for (const v of versions) v.stages = v.stages.includes('AWSCURRENT') ? ['AWSPREVIOUS'] : [];
          versions.push({ id: token, text: String(body.SecretString ?? ''), stages: ['AWSCURRENT'] });
          save(
            secret,
            versions.filter((v) => v.stages.length),
          );
        }
        return json('1.1', 200, { ARN: secret.arn, Name: secret.name, VersionId: token, VersionStages: ['AWSCURRENT'] });
      }
      const version = isFile(secret)
        ? stage === 'AWSCURRENT'
          ? await read().then((text) => ({ id: createHash('sha256').update(text).digest('hex').slice(0, 32), text, stages: [stage] }))
          : undefined
        : versionsOf(secret).find((v) => v.stages.includes(stage));
      if (!version) return notFound(`Secrets Manager can't find the specified secret value for staging label: ${stage}`);
      return json('1.1', 200, {
        ARN: secret.arn,
        Name: secret.name,
        SecretString: version.text,
        VersionId: version.id,
        VersionStages: version.stages,
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
