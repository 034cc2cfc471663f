// Work on one key runs one piece at a time within this process, in arrival order. The Cosmos adapter puts a
// document's read-modify-write updates through it: 32 concurrent turns of one session otherwise race on its
// ETag, one winning each round, and the last ones ran out of retries. Other processes still race; the ETag
// keeps that correct.
export class KeyQueue<Left> {
  /** The end of each key's queue: what its last work left for the next (undefined when it failed). */
  private readonly tails = new Map<string, Promise<Left | undefined>>();

  /**
   * Runs `work` after the work queued before it on `key`. `waited` says whether there was any, and `left` is
   * what that work left for the next (its second value); nothing is kept once the key's queue is empty.
   */
  run<R>(key: string, work: (waited: boolean, left: Left | undefined) => Promise<readonly [R, Left | undefined]>): Promise<R> {
    const previous = this.tails.get(key);
    const done = previous ? previous.then((left) => work(true, left)) : work(false, undefined);
    const tail = done.then(
      ([, left]) => left,
      () => undefined,
    );
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return done.then(([result]) => result);
  }
}
