// Work on one key runs one piece at a time within this process, in arrival order. The Cosmos adapter puts a
// document's read-modify-write updates through it: 32 concurrent turns of one session otherwise race on its
// ETag, one winning each round, and the last ones ran out of retries. Other processes still race; the ETag
// keeps that correct.
export class KeyQueue {
  private readonly tails = new Map<string, Promise<void>>();

  /** Runs `work` after the work queued before it on `key`; `waited` says whether there was any. */
  run<R>(key: string, work: (waited: boolean) => Promise<R>): Promise<R> {
    const previous = this.tails.get(key);
    const result = previous ? previous.then(() => work(true)) : work(false);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }
}
