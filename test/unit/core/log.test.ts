import { describe, expect, it } from 'vitest';
import { defaultLog, jsonLines, logOf, useDefaultLog } from '../../../functions/core/log';

describe('the log port', () => {
  it('writes one JSON line per call: level, message, then the fields', () => {
    const lines: string[] = [];
    const log = jsonLines((line) => lines.push(line));
    log.info('policies loaded', { origin: 'rules.cedar', policies: 1 });
    log.warn('a waiting slot was not freed', { operationId: 'op_1', error: 'boom' });
    log.error('unhandled API error');
    expect(lines).toEqual([
      '{"level":"info","message":"policies loaded","origin":"rules.cedar","policies":1}',
      '{"level":"warn","message":"a waiting slot was not freed","operationId":"op_1","error":"boom"}',
      '{"level":"error","message":"unhandled API error"}',
    ]);
  });

  it('is the one the deps carry, else the process’s, which the runtime installs', () => {
    const before = defaultLog();
    const installed: string[] = [];
    const carried: string[] = [];
    try {
      useDefaultLog(jsonLines((line) => installed.push(line)));
      logOf({}).warn('to the process');
      logOf({ log: jsonLines((line) => carried.push(line)) }).warn('to the deps');
      defaultLog().info('to the process again');
    } finally {
      useDefaultLog(before);
    }
    expect(installed.map((l) => JSON.parse(l).message)).toEqual(['to the process', 'to the process again']);
    expect(carried.map((l) => JSON.parse(l).message)).toEqual(['to the deps']);
  });
});
