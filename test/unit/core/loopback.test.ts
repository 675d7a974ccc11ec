import { describe, expect, it } from 'vitest';
import { isLoopbackAddress } from '../../../functions/core/loopback';

describe('isLoopbackAddress', () => {
  it('knows the loopback names and addresses, bracketed or not', () => {
    for (const a of ['localhost', 'LOCALHOST', '127.0.0.1', '127.1.2.3', '::1', '[::1]', '::ffff:127.0.0.1'])
      expect(isLoopbackAddress(a), a).toBe(true);
  });
  it('refuses everything else', () => {
    for (const a of ['10.0.0.1', '128.0.0.1', 'localhost.example.com', '::2', '127.0.0.1.nip.io'])
      expect(isLoopbackAddress(a), a).toBe(false);
  });
});
