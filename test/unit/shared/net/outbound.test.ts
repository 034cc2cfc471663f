// The outbound rules: every spelling of an address is judged by where it leads.
import { describe, expect, it } from 'vitest';
import { classifyAddress } from '../../../../shared/net/addresses.js';
import { guardedLookup, urlProblem, type OutboundRules } from '../../../../shared/net/outbound.js';

const model: OutboundRules = { policy: 'model', allowPrivateNetwork: false };
const user: OutboundRules = { policy: 'user', allowPrivateNetwork: false };
const userLocal: OutboundRules = { policy: 'user', allowPrivateNetwork: true };

describe('outbound rules', () => {
  it('classifies addresses by where they lead, however they are written', () => {
    const cases: [string, string][] = [
      ['169.254.169.254', 'link-local'],
      ['::ffff:169.254.169.254', 'link-local'],
      ['[::ffff:a9fe:a9fe]', 'link-local'],
      ['64:ff9b::a9fe:a9fe', 'link-local'],
      ['2002:a9fe:a9fe::1', 'link-local'],
      ['::a9fe:a9fe', 'link-local'],
      ['fe80::1', 'link-local'],
      ['168.63.129.16', 'platform'],
      ['::ffff:168.63.129.16', 'platform'],
      ['127.0.0.1', 'loopback'],
      ['0.0.0.0', 'loopback'],
      ['::1', 'loopback'],
      ['::', 'loopback'],
      ['10.1.2.3', 'private'],
      ['172.16.0.1', 'private'],
      ['192.168.1.1', 'private'],
      ['100.64.0.1', 'private'],
      ['fd00::1', 'private'],
      ['224.0.0.1', 'unroutable'],
      ['255.255.255.255', 'unroutable'],
      ['8.8.8.8', 'public'],
      ['2606:4700::1111', 'public'],
    ];
    for (const [address, cls] of cases) expect(classifyAddress(address), address).toBe(cls);
    expect(classifyAddress('example.com')).toBeUndefined();
  });

  it('lets model endpoints reach loopback and private networks over http(s), never link-local or the platform', () => {
    for (const ok of [
      'http://127.0.0.1:8080/v1',
      'http://localhost:1234',
      'http://10.0.0.7/v1',
      'https://api.openai.com/v1',
    ])
      expect(urlProblem(ok, model), ok).toBeUndefined();
    for (const bad of [
      'http://169.254.169.254/',
      'http://2852039166/',
      'http://0xA9FEA9FE/',
      'http://0251.0376.0251.0376/',
      'http://[::ffff:169.254.169.254]/',
      'http://168.63.129.16/',
      'http://[fe80::1]/',
      'ftp://x/',
      'file:///etc/passwd',
      'http://a:b@x/',
      'not a url',
    ]) {
      expect(urlProblem(bad, model), bad).toBeDefined();
    }
  });

  it('holds user URLs to https and public addresses, unless ALLOW_PRIVATE_NETWORK is set', () => {
    expect(urlProblem('https://docs.example.com/a', user)).toBeUndefined();
    for (const bad of [
      'http://docs.example.com/',
      'https://127.0.0.1/',
      'https://localhost/',
      'https://app.localhost/',
      'https://10.0.0.1/',
      'https://[fd00::1]/',
      'https://[::1]/',
      'https://169.254.169.254/',
    ]) {
      expect(urlProblem(bad, user), bad).toBeDefined();
    }
    expect(urlProblem('http://127.0.0.1:9000/hook', userLocal)).toBeUndefined();
    expect(urlProblem('http://169.254.169.254/', userLocal)).toBeDefined();
    expect(urlProblem('gopher://127.0.0.1/', userLocal)).toBeDefined();
  });

  it('names ALLOW_PRIVATE_NETWORK in a refusal it would lift, and only there', () => {
    for (const local of [
      'http://docs.example.com/',
      'https://127.0.0.1/',
      'https://localhost:8443/',
      'https://10.0.0.1/',
    ]) {
      expect(urlProblem(local, user), local).toContain('ALLOW_PRIVATE_NETWORK=true allows it');
    }
    for (const never of ['https://169.254.169.254/', 'https://168.63.129.16/', 'ftp://example.com/']) {
      expect(urlProblem(never, user), never).not.toContain('ALLOW_PRIVATE_NETWORK');
    }
  });

  it('refuses at connection time a name that resolves to a forbidden address', async () => {
    const lookup = (rules: OutboundRules) =>
      new Promise<unknown>((resolve) =>
        guardedLookup(rules)('localhost', { all: true }, (error, addresses) => resolve(error ?? addresses)),
      );
    expect(await lookup(user)).toMatchObject({ name: 'BlockedDestinationError', code: 'EBLOCKED' });
    expect(await lookup(model)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ address: expect.stringMatching(/^(127\.0\.0\.1|::1)$/) as string }),
      ]),
    );
  });
});
