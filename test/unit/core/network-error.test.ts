import { describe, expect, it } from 'vitest';
import { causeText, hostAndPort, networkErrorMessage, safeUrl, scrubUrls } from '../../../functions/core/network-error';

/** What undici's fetch throws for a refused connection: "fetch failed" with the system error as its cause. */
const refused = Object.assign(new TypeError('fetch failed'), {
  cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:3000'), { code: 'ECONNREFUSED' }),
});

describe('network errors', () => {
  it('keep a URL without credentials, query or fragment', () => {
    expect(safeUrl('https://user:pw@api.example.com:8443/v1/runs?token=t#frag')).toBe('https://api.example.com:8443/v1/runs');
    expect(safeUrl('not a url')).toBe('(invalid URL)');
    expect(scrubUrls('cannot use http://u:p@h:1/x?k=v here')).toBe('cannot use http://h:1/x here');
  });

  it('name the host and port, the scheme’s default when none is given', () => {
    expect(hostAndPort('http://127.0.0.1:3000/v1')).toBe('127.0.0.1:3000');
    expect(hostAndPort('https://api.example.com/v1')).toBe('api.example.com:443');
    expect(hostAndPort('http://api.example.com')).toBe('api.example.com:80');
  });

  it('say the cause instead of "fetch failed", one line for several addresses', () => {
    expect(networkErrorMessage('GET', 'http://127.0.0.1:3000/v1/runs?k=secret', refused)).toBe(
      'GET http://127.0.0.1:3000/v1/runs (127.0.0.1:3000): connect ECONNREFUSED 127.0.0.1:3000',
    );
    const both = Object.assign(new TypeError('fetch failed'), {
      cause: Object.assign(
        new AggregateError([
          Object.assign(new Error('connect ECONNREFUSED ::1:3000'), { code: 'ECONNREFUSED' }),
          Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:3000'), { code: 'ECONNREFUSED' }),
        ]),
        { code: 'ECONNREFUSED' },
      ),
    });
    expect(causeText(both)).toBe('connect ECONNREFUSED ::1:3000; connect ECONNREFUSED 127.0.0.1:3000');
    expect(causeText({ cause: { code: 'ENOTFOUND' } })).toBe('ENOTFOUND');
    expect(causeText(undefined)).toBe('unknown cause');
  });
});
