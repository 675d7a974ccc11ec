import { describe, expect, it } from 'vitest';
import { noEvents, notBeforeIn } from '../../../functions/core/lifecycle-events';
import { operation } from '../../support/records';

// lifecycle-events.ts is mostly the types of the engine's events; these are its two helpers.
describe('lifecycle event helpers', () => {
  it('a change without events, and a time that many seconds after the transition', () => {
    const op = operation();
    expect(noEvents(op)).toEqual({ op, events: [] });
    const now = Date.parse('2026-11-30T12:00:00Z');
    expect(notBeforeIn({ now, at: '', ids: { operationId: 'op_1', callId: 'call_1' } }, 30)).toBe('2026-11-30T12:00:30.000Z');
  });
});
