// The names this service answers to. A page on another site can make a browser send requests to this
// machine by resolving its own name to 127.0.0.1 (DNS rebinding); such a request carries that site's name in
// `Host`, so the standalone server refuses every request whose host is not one of the service's names
// (loopback, HOST, the configured public URLs, ALLOWED_HOSTS). Public URLs come from configuration, never
// from a request's headers.
import { bareHost, type Config } from '../config.js';
import { DomainError } from '../errors.js';

/** The host name of a `Host` header (port dropped), as the allow list compares it. */
export function hostOf(header: string): string {
  const bracketed = /^\[([^\]]*)\]/.exec(header);
  return bareHost(bracketed ? `[${bracketed[1] ?? ''}]` : (header.split(':')[0] ?? ''));
}

/** A `Host` header as a browser or client sends it: a name or an address (an IPv6 one bracketed), and a port. */
const HOST_HEADER = /^(?:\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::\d{1,5})?$/i;

/**
 * Whether a request with this `Host` is for this service (a request without one names no other site).
 * Anything but a plain name and port (user info, a second name, spaces) is no name of this service.
 */
export function servesHost(config: Pick<Config, 'allowedHosts'>, header: string | undefined): boolean {
  return header === undefined || (HOST_HEADER.test(header) && config.allowedHosts.includes(hostOf(header)));
}

/** The refusal of a request for a name this service does not answer to (the name is not echoed back). */
export const misdirected = () =>
  new DomainError(
    'misdirected',
    'MisdirectedRequest',
    'This service does not answer to the host name in the request: add it to ALLOWED_HOSTS, or set ' +
      'CORE_API_URL or MANAGEMENT_API_URL',
  );

/** Whether a browser's `Origin` is this API's own (scheme, an allowed host and the port the request came to). */
export function sameOrigin(
  config: Pick<Config, 'allowedHosts'>,
  origin: string | undefined,
  host: string | undefined,
): boolean {
  if (origin === undefined || host === undefined || !URL.canParse(origin)) return false;
  const o = new URL(origin);
  return o.protocol === 'http:' || o.protocol === 'https:'
    ? servesHost(config, o.host) && o.host.toLowerCase() === host.toLowerCase()
    : false;
}
