// How many calls each API endpoint has open at once, and who gets the next connection. An endpoint holds at
// most its `max_connections` calls (a streamed answer holds one for as long as it streams); calls beyond wait
// for one, and a connection that frees goes to the waiting caller (agent) holding the fewest of the
// endpoint's connections, so one busy agent cannot take them all while another waits (max-min fairness).
// Waiting counts against the call's deadline: one that gets no connection in time is refused with 503
// `ConnectionLimit`, saying so, not a timeout blamed on the model. Endpoints never wait for each other.
import { UpstreamError } from './upstream-errors.js';

/** Connections an endpoint holds at once when its definition does not say. */
export const DEFAULT_MAX_CONNECTIONS = 1024;

interface Waiter {
  tenant: string;
  grant: () => void;
}

/** One endpoint's connections: in use per tenant, and the callers waiting, oldest first. */
class EndpointConnections {
  inUse = 0;
  readonly held = new Map<string, number>();
  readonly waiting: Waiter[] = [];

  constructor(public max: number) {}

  take(tenant: string): void {
    this.inUse++;
    this.held.set(tenant, (this.held.get(tenant) ?? 0) + 1);
  }

  give(tenant: string): void {
    this.inUse--;
    const n = (this.held.get(tenant) ?? 1) - 1;
    if (n === 0) this.held.delete(tenant);
    else this.held.set(tenant, n);
    this.serve();
  }

  /** Hands free connections to waiters: the tenant holding fewest first, the oldest of equals. */
  serve(): void {
    while (this.inUse < this.max && this.waiting.length > 0) {
      let best = 0;
      let fewest = Infinity;
      for (const [i, waiter] of this.waiting.entries()) {
        const held = this.held.get(waiter.tenant) ?? 0;
        if (held < fewest) [best, fewest] = [i, held];
      }
      const [next] = this.waiting.splice(best, 1);
      if (!next) return;
      this.take(next.tenant);
      next.grant();
    }
  }

  get idle(): boolean {
    return this.inUse === 0 && this.waiting.length === 0;
  }
}

/** Who asks for a connection, until when it may wait (epoch ms), and the signal of a caller that may give up. */
export interface Claim {
  tenant: string;
  deadline: number;
  signal?: AbortSignal | undefined;
}

export class ConnectionGate {
  private readonly endpoints = new Map<string, EndpointConnections>();

  /**
   * A connection of `endpoint` for `tenant`, waiting until `deadline` (epoch ms) at most; the function that
   * gives it back (call it once, however the call ends). Throws 503 ConnectionLimit when none frees in time,
   * or the signal's reason when the caller gives up first.
   */
  acquire(
    endpoint: { objectId: string; maxConnections: number },
    { tenant, deadline, signal }: Claim,
  ): Promise<() => void> | (() => void) {
    let e = this.endpoints.get(endpoint.objectId);
    if (!e) this.endpoints.set(endpoint.objectId, (e = new EndpointConnections(endpoint.maxConnections)));
    // A changed definition applies at once; calls already holding more keep them until they end.
    if (e.max !== endpoint.maxConnections) {
      e.max = endpoint.maxConnections;
      e.serve();
    }
    const conns = e;
    const release = this.releaser(endpoint.objectId, conns, tenant);
    // The common case answers without a promise: a free connection and nobody waiting.
    if (conns.inUse < conns.max && conns.waiting.length === 0) {
      conns.take(tenant);
      return release;
    }
    return new Promise<() => void>((resolve, reject) => {
      const waiter: Waiter = {
        tenant,
        grant: () => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', abandon);
          resolve(release);
        },
      };
      const leave = () => {
        const at = conns.waiting.indexOf(waiter);
        if (at >= 0) conns.waiting.splice(at, 1);
        if (conns.idle) this.endpoints.delete(endpoint.objectId);
      };
      const abandon = () => {
        clearTimeout(timer);
        leave();
        reject(signal?.reason instanceof Error ? signal.reason : new Error('aborted'));
      };
      const timer = setTimeout(
        () => {
          signal?.removeEventListener('abort', abandon);
          leave();
          reject(connectionLimit(conns.max, deadline));
        },
        Math.max(0, deadline - Date.now()),
      );
      signal?.addEventListener('abort', abandon, { once: true });
      conns.waiting.push(waiter);
    });
  }

  /** How many calls hold or wait for a connection of an endpoint (for tests and metrics). */
  load(objectId: string): { inUse: number; waiting: number } {
    const e = this.endpoints.get(objectId);
    return { inUse: e?.inUse ?? 0, waiting: e?.waiting.length ?? 0 };
  }

  private releaser(objectId: string, conns: EndpointConnections, tenant: string): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      conns.give(tenant);
      if (conns.idle) this.endpoints.delete(objectId);
    };
  }
}

export const connectionLimit = (max: number, deadline: number) =>
  new UpstreamError(
    'unavailable',
    'ConnectionLimit',
    `All ${max} connections of the model's API endpoint are in use (its max_connections); no connection freed ` +
      `before the call's deadline`,
    { retryable: false, retryAfterMs: Math.max(1000, deadline - Date.now()) },
  );
