// Classifies IP addresses for the outbound rules (docs/api-decisions.md, Outbound URLs): every spelling of an address
// (IPv4 in decimal, hex or octal forms is normalised by the URL parser; IPv4 inside IPv6 is unwrapped here) is judged
// by the IPv4 or IPv6 address it reaches.
import ipaddr from 'ipaddr.js';

/** What an address is, for the outbound policies. */
export type AddressClass = 'public' | 'loopback' | 'private' | 'link-local' | 'platform' | 'unroutable';

/** Azure's platform (wire server / DNS) address: never a destination for anything a user configures. */
const PLATFORM_ADDRESSES = new Set(['168.63.129.16']);

/** IPv6 forms that carry an IPv4 address the packet may end up at. */
const EMBEDDING_RANGES = new Set(['ipv4Mapped', 'rfc6052', '6to4', 'teredo']);

function embeddedIpv4(v6: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const range = v6.range();
  const b = v6.toByteArray();
  if (range === 'ipv4Mapped' || range === 'rfc6052') return new ipaddr.IPv4(b.slice(12));
  if (range === '6to4') return new ipaddr.IPv4(b.slice(2, 6));
  // Teredo stores the client address inverted in the last 32 bits.
  if (range === 'teredo') return new ipaddr.IPv4(b.slice(12).map((x) => x ^ 0xff));
  // Deprecated IPv4-compatible ::a.b.c.d (the first 96 bits zero, not :: or ::1).
  if (b.slice(0, 12).every((x) => x === 0) && b.slice(12).some((x, i) => (i === 3 ? x > 1 : x !== 0)))
    return new ipaddr.IPv4(b.slice(12));
  return undefined;
}

function classifyV4(v4: ipaddr.IPv4): AddressClass {
  if (PLATFORM_ADDRESSES.has(v4.toString())) return 'platform';
  switch (v4.range()) {
    case 'unicast':
      return 'public';
    case 'loopback':
    case 'unspecified': // 0.0.0.0 reaches this host
      return 'loopback';
    case 'private':
    case 'carrierGradeNat':
      return 'private';
    case 'linkLocal':
      return 'link-local';
    default:
      return 'unroutable';
  }
}

/** The class of an IP address in any textual form; undefined when the text is not an IP address. */
export function classifyAddress(text: string): AddressClass | undefined {
  const bare = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  if (!ipaddr.isValid(bare)) return undefined;
  const parsed = ipaddr.parse(bare);
  if (parsed instanceof ipaddr.IPv4) return classifyV4(parsed);
  const v6 = parsed;
  const inner = EMBEDDING_RANGES.has(v6.range()) || v6.range() === 'unicast' ? embeddedIpv4(v6) : undefined;
  if (inner) return classifyV4(inner);
  switch (v6.range()) {
    case 'unicast':
      return 'public';
    case 'loopback':
    case 'unspecified':
      return 'loopback';
    case 'uniqueLocal':
      return 'private';
    case 'linkLocal':
      return 'link-local';
    default:
      return 'unroutable';
  }
}
