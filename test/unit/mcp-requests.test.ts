import { describe, expect, it } from 'vitest';
import { RunnerConfigSchema } from '../../functions/core/config';
import { checkRequestOrigin, isLoopbackAddress, type OriginPolicy } from '../../functions/http/request-origin';
import { callMetaOf, derivedCallId, InvalidParamsError } from '../../functions/mcp/tool-calls';

const deployed: OriginPolicy = {
  publicBaseUrl: 'https://abc123.execute-api.eu-west-1.amazonaws.com/prod',
  allowedOrigins: ['https://app.example.com'],
  onLoopback: false,
};
const local: OriginPolicy = { publicBaseUrl: 'http://127.0.0.1:3000', allowedOrigins: [], onLoopback: true };

const check = (policy: OriginPolicy, host: string | null, origin: string | null = null, scheme = policy.publicBaseUrl.split(':')[0]) =>
  checkRequestOrigin({ url: `${scheme}://${host ?? 'x'}/mcp`, host, origin }, policy).ok;

describe('DNS-rebinding protection for /mcp', () => {
  it("accepts the public base URL's host, and loopback names on any port only when listening on loopback", () => {
    expect(check(deployed, 'abc123.execute-api.eu-west-1.amazonaws.com')).toBe(true);
    expect(check(deployed, 'ABC123.execute-api.eu-west-1.amazonaws.com:443')).toBe(true);
    expect(check(deployed, 'abc123.execute-api.eu-west-1.amazonaws.com:8443')).toBe(false);
    expect(check(deployed, 'evil.example.com')).toBe(false);
    expect(check(deployed, 'localhost')).toBe(false);
    expect(check(deployed, '127.0.0.1:3000')).toBe(false);

    for (const host of ['127.0.0.1:3000', '127.0.0.1:41234', 'localhost:9', 'localhost', '[::1]:3000', '[::1]'])
      expect(check(local, host), host).toBe(true);
    for (const host of ['evil.example.com', 'evil.example.com:3000', '127.0.0.2:3000', '0.0.0.0:3000', '127.0.0.1.nip.io:3000'])
      expect(check(local, host), host).toBe(false);
  });

  it('refuses a missing or malformed Host', () => {
    for (const host of [null, '', 'user@127.0.0.1', '127.0.0.1/path', '127.0.0.1:3000:1', 'exa mple.com', '[::1'])
      expect(check(local, host), String(host)).toBe(false);
  });

  it('accepts an Origin only when it is the request’s own origin or listed in mcpAllowedOrigins', () => {
    expect(check(local, '127.0.0.1:3000', 'http://127.0.0.1:3000')).toBe(true);
    expect(check(local, 'localhost:5000', 'http://localhost:5000')).toBe(true);
    expect(check(local, '127.0.0.1:3000', 'http://127.0.0.1:3001')).toBe(false);
    expect(check(local, '127.0.0.1:3000', 'https://127.0.0.1:3000')).toBe(false);
    expect(check(local, '127.0.0.1:3000', 'http://evil.example.com')).toBe(false);
    expect(check(local, '127.0.0.1:3000', 'null')).toBe(false);
    expect(check(local, '127.0.0.1:3000', 'http://127.0.0.1:3000/')).toBe(false);

    const host = 'abc123.execute-api.eu-west-1.amazonaws.com';
    expect(check(deployed, host, `https://${host}`)).toBe(true);
    expect(check(deployed, host, 'https://app.example.com')).toBe(true);
    expect(check(deployed, host, 'http://app.example.com')).toBe(false);
    expect(check(deployed, host, 'https://app.example.com.evil.com')).toBe(false);
    // An allowed Origin does not make a foreign Host acceptable.
    expect(check(deployed, 'evil.example.com', 'https://app.example.com')).toBe(false);
  });

  it("takes the client's scheme from X-Forwarded-Proto when a gateway sets it", () => {
    // A Lambda behind API Gateway sees an https URL whatever the client used; the gateway's header says which.
    const viaGateway = (forwardedProto: string | null) =>
      checkRequestOrigin(
        { url: 'https://127.0.0.1:3000/mcp', host: '127.0.0.1:3000', origin: 'http://127.0.0.1:3000', forwardedProto },
        local,
      ).ok;
    expect(viaGateway(null)).toBe(false);
    expect(viaGateway('http')).toBe(true);
    expect(viaGateway('https')).toBe(false);
    expect(viaGateway('gopher')).toBe(false);
  });

  it('knows loopback addresses', () => {
    for (const address of ['127.0.0.1', '127.8.9.10', '::1', '[::1]', '::ffff:127.0.0.1', 'localhost'])
      expect(isLoopbackAddress(address), address).toBe(true);
    for (const address of ['10.0.0.1', '0.0.0.0', '::', '::ffff:10.0.0.1', 'abc123.execute-api.eu-west-1.amazonaws.com'])
      expect(isLoopbackAddress(address), address).toBe(false);
  });

  it('mcpAllowedOrigins takes exact origins only', () => {
    const config = (origins: unknown) => RunnerConfigSchema.safeParse({ principals: [], mcpAllowedOrigins: origins }).success;
    expect(config(['https://app.example.com', 'http://localhost:5173'])).toBe(true);
    for (const bad of [
      'https://app.example.com/',
      'https://app.example.com/path',
      'app.example.com',
      'HTTPS://APP.EXAMPLE.COM',
      'null',
      '*',
    ])
      expect(config([bad]), bad).toBe(false);
  });
});

describe('derived callIds', () => {
  it('are short, stable per session and request id, and differ across sessions and id types', () => {
    const session = 'payload.mac';
    const id = derivedCallId(session, 7);
    expect(id).toMatch(/^mcp_[A-Za-z0-9_-]{22}$/);
    expect(derivedCallId(session, 7)).toBe(id);
    expect(derivedCallId(session, '7')).not.toBe(id);
    expect(derivedCallId(session, 8)).not.toBe(id);
    expect(derivedCallId('payload.other', 7)).not.toBe(id);
    // However long the session id and the request id, the callId stays short.
    expect(derivedCallId('x'.repeat(2000), 'y'.repeat(1000))).toHaveLength(26);
  });
});

describe("a tools/call's _meta", () => {
  it('is honoured whole, other keys passed by, or refused naming the key: never half-read', () => {
    expect(callMetaOf(undefined)).toEqual({});
    expect(callMetaOf({ 'toolrunner/callId': 'c1', 'toolrunner/turn': 0, progressToken: 7 })).toMatchObject({
      'toolrunner/callId': 'c1',
      'toolrunner/turn': 0,
    });
    for (const [meta, key] of [
      [{ 'toolrunner/callId': 'c1', 'toolrunner/turn': '1' }, 'toolrunner/turn'],
      [{ 'toolrunner/callId': 'c1', 'toolrunner/turn': 1.5 }, 'toolrunner/turn'],
      [{ 'toolrunner/callId': 'c1', 'toolrunner/turn': -1 }, 'toolrunner/turn'],
      [{ 'toolrunner/callId': '' }, 'toolrunner/callId'],
      [{ 'toolrunner/callId': 'x'.repeat(129) }, 'toolrunner/callId'],
      [{ 'toolrunner/callId': 1 }, 'toolrunner/callId'],
    ] as const) {
      expect(() => callMetaOf(meta), JSON.stringify(meta)).toThrow(InvalidParamsError);
      expect(() => callMetaOf(meta)).toThrow(`_meta["${key}"]`);
    }
  });
});
