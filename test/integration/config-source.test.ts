import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileConfigSource, secretConfigSource } from '../../functions/adapters/config-source';
import { policySource } from '../../functions/adapters/policy-source';
import { makeRegistry } from '../../functions/core/tool-spec';
import { makeDemoTools } from '../../functions/tools/demo-tools';
import { secretsManager } from '../../local/template/local-services';

const dir = mkdtempSync(join(tmpdir(), 'toolrunner-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const principal = (id: string) => ({ id, key: `key_${id}_0123456789abcdef`, roles: ['agent'], tools: '*' });

describe('the local config file', () => {
  it('keeps serving the last valid configuration while the file is invalid, and logs each bad version once', async () => {
    const path = join(dir, 'config.json');
    writeFileSync(path, JSON.stringify({ principals: [principal('alice')], approvalSecret: 's'.repeat(32) }));
    const logged: string[] = [];
    const config = fileConfigSource(path, (line) => logged.push(line));
    expect((await config()).principals.map((p) => p.id)).toEqual(['alice']);

    // Caught mid-write: half a document.
    const full = JSON.stringify({ principals: [principal('alice'), principal('bob')], approvalSecret: 's'.repeat(32) });
    writeFileSync(path, full.slice(0, full.length / 2));
    for (let i = 0; i < 20; i++) expect((await config()).principals.map((p) => p.id)).toEqual(['alice']);
    expect(logged).toHaveLength(1);
    expect(JSON.parse(logged[0])).toMatchObject({ level: 'warn', path, problem: expect.stringContaining('not valid JSON') });
    // The log never echoes the file: it holds keys.
    expect(logged[0]).not.toContain('key_');

    // A second, different bad version (valid JSON, wrong shape) is logged once more.
    writeFileSync(path, JSON.stringify({ principals: [{ id: 'mallory', key: 'short', roles: [], tools: '*' }] }));
    for (let i = 0; i < 20; i++) expect((await config()).principals.map((p) => p.id)).toEqual(['alice']);
    expect(logged).toHaveLength(2);
    expect(logged[1]).toContain('principals.0');
    expect(logged[1]).not.toContain('short');

    // The write completes: the new configuration applies at once.
    writeFileSync(path, full);
    expect((await config()).principals.map((p) => p.id)).toEqual(['alice', 'bob']);
    expect(logged).toHaveLength(2);
  });

  it('refuses to start from a file that was never valid', async () => {
    const path = join(dir, 'broken.json');
    writeFileSync(path, '{"principals": [');
    await expect(fileConfigSource(path, () => undefined)()).rejects.toThrow(/not valid JSON/);
  });
});

describe('the AWS config secret', () => {
  // The real Secrets Manager client against the local Secrets Manager the template stack serves.
  let server: Server;
  let client: SecretsManagerClient;
  const path = join(dir, 'secret.json');
  const secrets = secretsManager([{ arn: 'arn:aws:secretsmanager:us-east-1:000000000000:secret:cfg-AbCdEf', name: 'cfg' }], path);
  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk) => (body += chunk));
      req.on('end', async () => {
        const target = String(req.headers['x-amz-target'] ?? '').replace(/^secretsmanager\./, '');
        const reply = await secrets.handle(target, JSON.parse(body || '{}'));
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

  it('serves the document with its approvalSecret', async () => {
    writeFileSync(path, JSON.stringify({ principals: [principal('alice')], approvalSecret: 'a'.repeat(32) }));
    const config = await secretConfigSource(client, 'cfg', 0)();
    expect(config).toMatchObject({ approvalSecret: 'a'.repeat(32), principals: [{ id: 'alice' }] });
  });

  it('refuses a document without approvalSecret: no function may sign links with a key of its own', async () => {
    writeFileSync(path, JSON.stringify({ principals: [principal('alice')] }));
    await expect(secretConfigSource(client, 'cfg', 0)()).rejects.toThrow(/cfg: invalid configuration: approvalSecret is required/);
  });

  it('a local file without approvalSecret still serves, with a key of this process', async () => {
    const local = join(dir, 'no-secret.json');
    writeFileSync(local, JSON.stringify({ principals: [principal('alice')] }));
    const first = await fileConfigSource(local)();
    expect(first.approvalSecret.length).toBeGreaterThanOrEqual(32);
  });
});

describe('the policies of the configuration', () => {
  const tools = makeRegistry(makeDemoTools('http://127.0.0.1:1'));
  const GOOD = '@id("calls") permit(principal, action in Action::"call", resource);';
  const BAD =
    '@id("calls") permit(principal, action in Action::"call", resource);\n\npermit(principal, action == Action::"get_order", resource)\nwhen { context.input.order > 1 };';

  it('loads a policiesFile once per change; a bad version is logged once with its line, the last valid one keeps deciding', async () => {
    const path = join(dir, 'policies-config.json');
    writeFileSync(join(dir, 'rules.cedar'), GOOD);
    writeFileSync(path, JSON.stringify({ principals: [principal('alice')], approvalSecret: 's'.repeat(32), policiesFile: 'rules.cedar' }));
    const logged: string[] = [];
    const config = fileConfigSource(path, () => undefined);
    const source = policySource(tools, { baseDir: dir, log: (line) => logged.push(line) });
    const policies = async () => source(await config());
    const first = await policies();
    expect(first?.size).toBe(1);
    expect(await policies()).toBe(first);
    expect(logged.map((l) => JSON.parse(l))).toEqual([{ level: 'info', message: 'policies loaded', origin: 'rules.cedar', policies: 1 }]);

    writeFileSync(join(dir, 'rules.cedar'), BAD);
    for (let i = 0; i < 5; i++) expect(await policies()).toBe(first);
    expect(logged).toHaveLength(2);
    expect(JSON.parse(logged[1])).toMatchObject({ level: 'warn', problem: expect.stringMatching(/^rules\.cedar:4: .*order/) });
  });

  it('refuses every decision while the policies were never valid (fails closed), naming the line', async () => {
    const config = { principals: [], policies: BAD };
    await expect(policySource(tools, { baseDir: dir, log: () => undefined })(config)).rejects.toThrow(
      /the policies do not load: policies:4: /,
    );
  });

  it('the deployed file wins over the document; without either there are no policies', async () => {
    writeFileSync(join(dir, 'deployed.cedar'), `${GOOD}\n@id("second") permit(principal, action, resource);`);
    const config = { principals: [], policies: GOOD };
    expect(
      (await policySource(tools, { baseDir: dir, deployedFile: join(dir, 'deployed.cedar'), log: () => undefined })(config))?.size,
    ).toBe(2);
    expect(await policySource(tools, { baseDir: dir })({ principals: [] })).toBeUndefined();
  });
});
