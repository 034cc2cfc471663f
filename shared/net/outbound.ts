// The service's network reach, enforced twice: on the URL when it is saved, and on every
// address a name resolves to when a connection is made (so DNS cannot point a saved name inside later).
//   `model`: operator-configured model endpoints: http(s), loopback and private networks allowed.
//   `user`:  URLs users give the service to call (web data sources, webhooks): https and public
//            addresses only, unless ALLOW_PRIVATE_NETWORK=true (local development and test suites).
// Link-local addresses (instance metadata) and the Azure platform address are never reachable.
import dns, { type LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { Agent } from './undici.js';
import { classifyAddress, type AddressClass } from './addresses.js';

export type OutboundPolicy = 'model' | 'user';

export interface OutboundRules {
  policy: OutboundPolicy;
  /** ALLOW_PRIVATE_NETWORK: user URLs may then be plain http and reach loopback and private networks. */
  allowPrivateNetwork: boolean;
}

/** A destination the rules refuse. The message never says whether anything listens there. */
export class BlockedDestinationError extends Error {
  override name = 'BlockedDestinationError';
  readonly code = 'EBLOCKED';
}

/** Whether an address of this class may be reached under the rules. */
export function addressAllowed(cls: AddressClass, rules: OutboundRules): boolean {
  switch (cls) {
    case 'public':
      return true;
    case 'loopback':
    case 'private':
      return rules.policy === 'model' || rules.allowPrivateNetwork;
    default:
      return false;
  }
}

const LOCAL_NAMES = /^(localhost|.*\.localhost)\.?$/i;

/** Why the URL is refused under the rules, or undefined when it may be saved. */
export function urlProblem(text: string, rules: OutboundRules): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'must be an absolute URL';
  }
  const plainHttpAllowed = rules.policy === 'model' || rules.allowPrivateNetwork;
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && plainHttpAllowed)) {
    return plainHttpAllowed
      ? 'must be an http or https URL'
      : `must be an https URL${url.protocol === 'http:' ? LOCAL_HINT : ''}`;
  }
  if (url.username !== '' || url.password !== '') return 'must not carry credentials';
  // The URL parser has already turned every IPv4 spelling (decimal, hex, octal, short) into dotted form.
  const host = url.hostname;
  const cls = classifyAddress(host) ?? (LOCAL_NAMES.test(host) ? 'loopback' : undefined);
  if (cls !== undefined && !addressAllowed(cls, rules)) return addressProblem(cls, rules);
  return undefined;
}

/** What a refusal adds when the operator's setting would allow the destination (local development). */
const LOCAL_HINT = '; ALLOW_PRIVATE_NETWORK=true allows it (local development)';

/** Why an address class is refused, naming the setting when it would allow it. */
function addressProblem(cls: AddressClass, rules: OutboundRules): string {
  return addressAllowed(cls, { ...rules, allowPrivateNetwork: true })
    ? `must not point to a loopback or private network address${LOCAL_HINT}`
    : 'must not point to a link-local, platform or internal address';
}

export type Resolve = (
  hostname: string,
  options: dns.LookupAllOptions,
  callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

/** Resolves a host name and checks every address it has; refuses with BlockedDestinationError. */
export function guardedLookup(rules: OutboundRules, resolve: Resolve = dns.lookup): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
      if (error) return callback(error, '', 0);
      const [first] = addresses;
      if (!first || addresses.some((a) => !addressAllowed(classifyAddress(a.address) ?? 'unroutable', rules))) {
        return callback(new BlockedDestinationError(`${hostname} is not an allowed destination`), '', 0);
      }
      if (options.all) return callback(null, addresses);
      callback(null, first.address, first.family);
    });
  };
}

/**
 * Checks a name's addresses now (on save): refused when any resolves to a forbidden address. A name that
 * does not resolve here is accepted, and checked again when a connection is made.
 */
export async function resolvesOutside(hostname: string, rules: OutboundRules): Promise<boolean> {
  if (classifyAddress(hostname) !== undefined) return false;
  try {
    const addresses = await dns.promises.lookup(hostname, { all: true });
    return addresses.some((a) => !addressAllowed(classifyAddress(a.address) ?? 'unroutable', rules));
  } catch {
    return false;
  }
}

/**
 * Why a user URL may not be saved, or undefined: the URL rules, and for a name, the addresses it resolves to
 * now (checked again at every connection).
 */
export async function savedUrlProblem(url: string, rules: OutboundRules): Promise<string | undefined> {
  const problem = urlProblem(url, rules);
  if (problem) return problem;
  return (await resolvesOutside(new URL(url).hostname, rules))
    ? 'must not point to a link-local, platform or internal address'
    : undefined;
}

/**
 * An HTTP client pool whose every connection passes the rules. Redirects are never followed. `connections`
 * per origin: 128 unless said (null: no limit, for a pool whose callers bound themselves).
 */
export function guardedAgent(rules: OutboundRules, options: { connections?: number | null } = {}): Agent {
  return new Agent({
    connect: { lookup: guardedLookup(rules), timeout: 10_000 },
    keepAliveTimeout: 30_000,
    connections: options.connections === undefined ? 128 : options.connections,
  });
}

/** A node:https agent (for SDKs on node:http) whose every connection passes the rules. */
export function guardedHttpsAgent(rules: OutboundRules, resolve?: Resolve): https.Agent {
  return new https.Agent({ keepAlive: true, lookup: guardedLookup(rules, resolve), timeout: 30_000 });
}

/** The same for plain http (an account a connection string names over http, such as a storage emulator). */
export function guardedHttpAgent(rules: OutboundRules, resolve?: Resolve): http.Agent {
  return new http.Agent({ keepAlive: true, lookup: guardedLookup(rules, resolve), timeout: 30_000 });
}
