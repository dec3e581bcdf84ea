/**
 * Frees a buffer's memory at once instead of when the collector next runs: detaches its
 * ArrayBuffer (`transfer(0)`). Only for a view that is the whole of its ArrayBuffer and that
 * nothing else still reads; it is empty afterwards. Under a runtime without
 * ArrayBuffer.prototype.transfer (Node 20) it does nothing and the collector frees it later.
 * Bursts of large short-lived reads are what this is for: garbage waiting for a collection,
 * plus the allocator's delay before it returns pages, is most of a burst's peak RSS.
 */
export function freeNow(view: Uint8Array): void {
  if (view.byteOffset !== 0) return;
  const buffer = view.buffer as ArrayBuffer & { transfer?(length: number): ArrayBuffer };
  if (buffer.byteLength === view.byteLength && typeof buffer.transfer === "function") buffer.transfer(0);
}
