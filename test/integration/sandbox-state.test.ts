import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { StateFile } from '../../sandbox/state';

const dir = mkdtempSync(join(tmpdir(), 'toolrunner-sandbox-state-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the sandbox state file', () => {
  it('coalesces a burst of changes into at most two writes, off the event loop, and ends with every change on disk', async () => {
    const path = join(dir, 'burst.json');
    const file = new StateFile(path);
    const before = readFileSync(path, 'utf8');
    for (let i = 0; i < 200; i++) {
      file.state.ledger.push({ kind: 'email', id: `em_${i}`, body: { i }, at: new Date(0).toISOString() });
      file.save();
    }
    // save() returned 200 times without touching the disk: the event loop never waited on a write.
    expect(readFileSync(path, 'utf8')).toBe(before);
    await file.durable();
    expect(file.writes).toBeLessThanOrEqual(2);
    const onDisk = JSON.parse(readFileSync(path, 'utf8'));
    expect(onDisk.ledger).toHaveLength(200);
    expect(onDisk.ledger[199].id).toBe('em_199');
    // The ledger holds customers' details: owner-only.
    expect(statSync(path).mode & 0o777).toBe(0o600);
  });

  it('a change made while a write is in flight is on disk once durable() resolves', async () => {
    const path = join(dir, 'inflight.json');
    const file = new StateFile(path);
    file.state.nextId = 1;
    file.save();
    const first = file.durable();
    file.state.nextId = 2;
    file.save();
    const second = file.durable();
    await first;
    await second;
    expect(JSON.parse(readFileSync(path, 'utf8')).nextId).toBe(2);
    expect(file.writes).toBe(2);
    // Nothing to wait for when nothing changed.
    await file.durable();
    expect(file.writes).toBe(2);
    // A restart reads what was written.
    expect(new StateFile(path).state.nextId).toBe(2);
  });
});
