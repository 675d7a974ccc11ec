import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fileConfigSource } from '../../functions/adapters/config-source';

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
