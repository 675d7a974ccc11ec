import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { secretConfigSource } from '../../functions/adapters/config-source';
import { makeSeedHandler } from '../../functions/handlers/seed-signing-key';
import { createCustomResources } from '../../local/template/custom-resources';
import { secretsManager } from '../../local/template/local-services';

const CONFIG = 'arn:aws:secretsmanager:us-east-1:000000000000:secret:RunnerConfig-0123456789ab-a1b2c3';
const KEY = 'arn:aws:secretsmanager:us-east-1:000000000000:secret:RunnerSigningKey-0123456789ab-d4e5f6';
const generation = { SecretStringTemplate: '{}', GenerateStringKey: 'approvalSecret', PasswordLength: 48, ExcludePunctuation: true };

/**
 * The seed as template mode runs it: the real handler and the real Secrets Manager client against the local
 * Secrets Manager, created as CloudFormation creates a custom resource. The principals document is the local
 * file holding the `approvalSecret` links were signed with before the key moved out.
 */
describe('the signing key seed, run as CloudFormation runs a custom resource', () => {
  const dir = mkdtempSync(join(tmpdir(), 'seed-'));
  const configPath = join(dir, 'config.json');
  const old = 'o'.repeat(40);
  writeFileSync(configPath, JSON.stringify({ principals: [], approvalSecret: old }));
  const secrets = secretsManager(
    [
      { arn: CONFIG, name: 'RunnerConfig-0123456789ab' },
      { arn: KEY, name: 'RunnerSigningKey-0123456789ab', generate: generation },
    ],
    configPath,
    { fileBacked: new Set([CONFIG]), storeDir: join(dir, 'secrets') },
  );
  let server: Server;
  let client: SecretsManagerClient;
  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk) => (body += chunk));
      req.on('end', async () => {
        const reply = await secrets.handle(String(req.headers['x-amz-target']).replace(/^secretsmanager\./, ''), JSON.parse(body || '{}'));
        res.writeHead(reply.status, { 'content-type': reply.contentType }).end(reply.body);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    client = new SecretsManagerClient({
      region: 'us-east-1',
      endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    });
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const handler = () => makeSeedHandler(() => client);
  const create = (lines: string[] = []) =>
    createCustomResources({
      resources: [
        {
          logicalId: 'RunnerSigningKeySeed',
          type: 'Custom::ToolRunnerSigningKeySeed',
          serviceToken: 'seed',
          properties: { ServiceToken: 'seed', ConfigSecretArn: CONFIG, SigningKeyArn: KEY },
        },
      ],
      stackId: 'arn:aws:cloudformation:us-east-1:000000000000:stack/Test/1',
      file: join(dir, 'custom-resources.json'),
      invoke: (arn, event) => (arn === 'seed' ? handler()(event as never) : undefined),
      log: (line) => lines.push(line),
    });

  it('a new key is generated from its template; the seed replaces it with the old approvalSecret, once', async () => {
    const generated = await secretConfigSource(client, CONFIG, 0, KEY)();
    expect(generated.approvalSecret).toMatch(/^[A-Za-z0-9]{48}$/);
    expect(generated.approvalSecret).not.toBe(old);

    const lines: string[] = [];
    expect(await create(lines)).toBe(1);
    expect(lines).toEqual([
      expect.stringContaining('custom resource RunnerSigningKeySeed (Custom::ToolRunnerSigningKeySeed) created: seeded: true'),
    ]);
    // The functions now sign and verify with the key the links in flight were made with.
    expect((await secretConfigSource(client, CONFIG, 0, KEY)()).approvalSecret).toBe(old);

    // Created once: a restart on the same data runs nothing, and the key stays.
    expect(await create()).toBe(0);
    expect((await secretConfigSource(client, CONFIG, 0, KEY)()).approvalSecret).toBe(old);
    // The document's own approvalSecret is not what signs once the key exists: editing it changes nothing.
    writeFileSync(configPath, JSON.stringify({ principals: [], approvalSecret: 'n'.repeat(40) }));
    expect((await secretConfigSource(client, CONFIG, 0, KEY)()).approvalSecret).toBe(old);
  });

  it('a repeated Create delivery stores no second version (the request id is the version token)', async () => {
    const event = {
      RequestType: 'Create',
      ResponseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/ignored`,
      StackId: 's',
      RequestId: '11111111-2222-3333-4444-555555555555',
      LogicalResourceId: 'RunnerSigningKeySeed',
      ResourceType: 'Custom::ToolRunnerSigningKeySeed',
      ServiceToken: 'seed',
      ResourceProperties: { ServiceToken: 'seed', ConfigSecretArn: CONFIG, SigningKeyArn: KEY },
    };
    writeFileSync(configPath, JSON.stringify({ principals: [], approvalSecret: old }));
    const store = join(dir, 'secrets', 'secret-RunnerSigningKey-0123456789ab.json');
    // The local Secrets Manager answers the response PUT with 400 (not a JSON API call): the handler throws
    // after it stored the key, as it would if CloudFormation's URL refused it.
    await handler()(event as never).catch(() => undefined);
    const versions = JSON.parse(readFileSync(store, 'utf8')).versions;
    await handler()(event as never).catch(() => undefined);
    expect(JSON.parse(readFileSync(store, 'utf8')).versions).toEqual(versions);
    expect(versions.find((v: { stages: string[] }) => v.stages.includes('AWSCURRENT')).text).toBe(JSON.stringify({ approvalSecret: old }));
  });
});
