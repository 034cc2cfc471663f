import bs58 from 'bs58';
import { describe, expect, it } from 'vitest';
import { formatToken, hashSecret, newSecret, parseToken } from '../../../../shared/auth/token-format.js';

const INSTANCE = '7a3c5a2e-4b1f-4c8e-9d6a-0f2b8e1c4d5a';
const TOKEN_ID = '0f6b3c1e-2d4a-4b8c-9e1f-3a5c7d9e1b2f';

describe('agent access token format', () => {
  it('decodes back to the instance id, context id and token id', () => {
    const secret = newSecret();
    const token = formatToken({ instanceId: INSTANCE, agentName: 'helper', tokenId: TOKEN_ID, secret });
    const parts = token.split('.');
    expect(parts[0]).toBe('keya');
    expect(parts[5]).toBe('ayek');
    const decode = (s: string) => Buffer.from(bs58.decode(s)).toString('utf8');
    expect(decode(parts[1]!)).toBe(INSTANCE);
    expect(decode(parts[2]!)).toBe(`${INSTANCE}~Svc.Agent~Agents~helper`);
    expect(decode(parts[3]!)).toBe(TOKEN_ID);
    expect(parts[4]).toBe(secret);
    expect(parseToken(token)).toEqual({
      instanceId: INSTANCE,
      contextId: `${INSTANCE}~Svc.Agent~Agents~helper`,
      agentName: 'helper',
      tokenId: TOKEN_ID,
      secret,
    });
  });

  it('makes secrets of at least 256 bits, different every time', () => {
    const a = newSecret();
    expect(bs58.decode(a)).toHaveLength(32);
    expect(newSecret()).not.toBe(a);
  });

  it('rejects anything not of the format', () => {
    const good = formatToken({ instanceId: INSTANCE, agentName: 'helper', tokenId: TOKEN_ID, secret: newSecret() });
    const [k, i, c, t, s, e] = good.split('.') as [string, string, string, string, string, string];
    for (const bad of [
      '',
      'keya',
      good.replace('keya.', 'keyb.'),
      good.replace('.ayek', '.nope'),
      `${good}.extra`,
      [k, i, c, t, `${s}0`, e].join('.'), // '0' is not a Base58 character
      [k, i, c, bs58.encode(Buffer.from('not-a-guid')), s, e].join('.'),
      [k, i, bs58.encode(Buffer.from(`${INSTANCE}~Svc.Prompt~Prompts~x`)), t, s, e].join('.'),
      [k, i, bs58.encode(Buffer.from(`${INSTANCE}~Svc.Agent~Agents~`)), t, s, e].join('.'),
      [k, 'l0l', c, t, s, e].join('.'),
      'x'.repeat(5000),
    ]) {
      expect(parseToken(bad), bad.slice(0, 40)).toBeUndefined();
    }
  });

  it('hashes the secret with the token id, so the stored value is neither the secret nor shared', () => {
    const secret = newSecret();
    const h = hashSecret(TOKEN_ID, secret);
    expect(h).toHaveLength(32);
    expect(h.toString('hex')).not.toContain(secret);
    expect(hashSecret('11111111-1111-4111-8111-111111111111', secret).equals(h)).toBe(false);
  });
});
