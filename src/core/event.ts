/** A Flume event: string headers and an opaque byte body. */
export interface Event {
  headers: Record<string, string>;
  body: Uint8Array;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Builds an event; a string body is encoded as UTF-8. */
export function createEvent(body: Uint8Array | string, headers: Record<string, string> = {}): Event {
  return { headers, body: typeof body === "string" ? encoder.encode(body) : body };
}

export function bodyText(event: Event): string {
  return decoder.decode(event.body);
}

/**
 * Makes the bodies of a batch hold only their own bytes when they are small views into much
 * larger buffers (a pipe or socket read of which an interceptor kept one line in a thousand):
 * they are copied into one new buffer for the batch, so a queued event no longer keeps the
 * whole read alive and a channel's byteCapacity, which counts body bytes, bounds memory.
 * Bodies that own at least half of the buffers they keep alive are left as they are (one pass
 * over the batch, no allocation). Returns whether it copied. For batches that interceptors
 * thinned out: without drops the rest of those buffers is queued events too.
 */
export function compactBodies(events: Event[]): boolean {
  let own = 0;
  let held = 0;
  let last: ArrayBufferLike | null = null;
  for (let i = 0; i < events.length; i++) {
    const body = events[i].body;
    own += body.byteLength;
    // At offset 0: an array of its own (or the first line of a read). Its .buffer is not read:
    // for a small array JSC would then allocate an ArrayBuffer apart, in time and memory.
    if (body.byteOffset === 0) {
      held += body.byteLength;
      continue;
    }
    // Bodies of one read are adjacent in a batch: a buffer is counted once per run.
    if (body.buffer !== last) {
      last = body.buffer;
      held += last.byteLength;
    }
  }
  if (held <= own * 2) return false;
  const copy = new Uint8Array(own);
  let pos = 0;
  for (let i = 0; i < events.length; i++) {
    const e = events[i];
    const length = e.body.byteLength;
    copy.set(e.body, pos);
    e.body = copy.subarray(pos, pos + length);
    pos += length;
  }
  return true;
}
