/**
 * Reusable write buffers for encoded transactions: one 130 KB buffer per 1000-event commit
 * would otherwise be fresh off-heap memory each time, which the GC returns late (RSS grows).
 * Power-of-two size classes from 64 KB to 8 MB; smaller buffers come from Node's slab, larger
 * ones are allocated and dropped.
 */
const MIN_CLASS = 64 * 1024;
const MAX_CLASS = 8 * 1024 * 1024;
const PER_CLASS = 8;

export class BufferPool {
  private readonly free = new Map<number, ArrayBuffer[]>();

  get(size: number): Buffer {
    if (size < MIN_CLASS / 4 || size > MAX_CLASS) return Buffer.allocUnsafe(size);
    let cls = MIN_CLASS;
    while (cls < size) cls *= 2;
    const ab = this.free.get(cls)?.pop() ?? new ArrayBuffer(cls);
    return Buffer.from(ab, 0, size);
  }

  /** Returns a buffer from get() once nothing reads it any more. */
  release(buf: Buffer): void {
    const ab = buf.buffer;
    if (!(ab instanceof ArrayBuffer) || buf.byteOffset !== 0) return;
    const cls = ab.byteLength;
    if (cls < MIN_CLASS || cls > MAX_CLASS || (cls & (cls - 1)) !== 0) return;
    let list = this.free.get(cls);
    if (!list) this.free.set(cls, (list = []));
    if (list.length < PER_CLASS) list.push(ab);
  }
}
