// A value made by its first call and shared by every later one: clients and modules made on first use.

/** `make()` on the first call, the same promise after (a rejection too: the next caller sees it). */
export function once<T>(make: () => Promise<T>): () => Promise<T> {
  let made: Promise<T> | undefined;
  return () => (made ??= make());
}
