// Fair shares of a queue's workers: work is keyed (a webhook by the user whose operation it reports, a
// pipeline run by its data source), and each key may hold only a few of this instance's workers at once. A
// message whose key is full is put back with a short delay instead of waiting in a worker: the queue skips
// it, so one user's hanging receivers or one source's slow documents cannot hold the capacity others need.

export class Shares {
  private readonly held = new Map<string, number>();

  /** `width`: workers one key may hold at once on this instance. */
  constructor(private readonly width: number) {}

  /** Takes a place in the key's share: the function that gives it back, or undefined when the share is full. */
  enter(key: string): (() => void) | undefined {
    const busy = this.held.get(key) ?? 0;
    if (busy >= this.width) return undefined;
    this.held.set(key, busy + 1);
    let left = false;
    return () => {
      if (left) return;
      left = true;
      const rest = (this.held.get(key) ?? 1) - 1;
      if (rest <= 0) this.held.delete(key);
      else this.held.set(key, rest);
    };
  }
}
