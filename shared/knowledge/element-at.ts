// A checked read of one element of an array or typed array whose size the caller laid out (a slot, a word
// of a code, a byte of WebAssembly memory): an index past the end is a bug, thrown as one, not read as a
// number.

/** The element at `index`; throws RangeError when there is none. */
export function elementAt<T>(array: ArrayLike<T>, index: number): T {
  const value = array[index];
  if (value === undefined) throw new RangeError(`index ${index} is outside an array of ${array.length}`);
  return value;
}
