/** The per-event arrays of the ledger and the cause tracker. */
export type EventArray = Uint8Array | Uint16Array | Uint32Array | Int32Array;

/** A copy of `a` of the same type, `size` long (zero beyond a's length). */
export function grown<T extends EventArray>(a: T, size: number): T {
  const b = new (a.constructor as new (n: number) => T)(size);
  b.set(a);
  return b;
}
