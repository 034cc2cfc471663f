// Whether this process came to its memory bound: V8 collects all the garbage it can (a "last resort"
// collection) only when an allocation failed, on its heap or for an ArrayBuffer, before it tries once more.
// Some libraries catch the RangeError of a failed allocation and go on (pdf.js skips the rest of a page it
// cannot parse), and would answer part of a document as if it were the whole; a process that serves such
// work counts these collections around each task instead, at no cost but an entry per collection.
import { PerformanceObserver, constants, type PerformanceEntry } from 'node:perf_hooks';

const isLastResort = (entry: PerformanceEntry) => {
  const detail: unknown = 'detail' in entry ? entry.detail : undefined;
  if (typeof detail !== 'object' || detail === null || !('flags' in detail) || typeof detail.flags !== 'number')
    return false;
  return (detail.flags & constants.NODE_PERFORMANCE_GC_FLAGS_ALL_AVAILABLE_GARBAGE) !== 0;
};

export class LastResortCollections {
  private seen = 0;
  private readonly observer = new PerformanceObserver((list) => this.add(list.getEntries()));

  constructor() {
    this.observer.observe({ entryTypes: ['gc'] });
  }

  /** The last-resort collections so far: compare two counts around a task. */
  async count(): Promise<number> {
    // A collection's entry reaches its observers from an immediate: every one queued before this has run.
    await new Promise((resolve) => setImmediate(resolve));
    this.add(this.observer.takeRecords());
    return this.seen;
  }

  private add(entries: readonly PerformanceEntry[]): void {
    this.seen += entries.filter(isLastResort).length;
  }
}
