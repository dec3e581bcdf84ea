/**
 * Frees the copy the client library's connection makes of each of our Produce requests once the
 * broker answered it. The connection writes a request as one new buffer holding its header and
 * the body it was given (for a batch of 1000 events, ~110 kB), which stays garbage until the
 * next collection; freed when the broker answered, it no longer adds to the agent's peak.
 *
 * How it is found: the connection writes a request on its socket within the send() call that
 * hands it the payload, unless earlier requests hold the socket (then it is left to the
 * collector). The socket's write is wrapped (once a socket) to note the chunk written while one
 * of our sends runs, if it is a whole frame that ends with the body given. A broker's answer
 * means it read the whole request: nothing needs the buffer any more.
 */
import { freeIfWhole } from "./response-release.ts";

export interface SocketLike {
  write(chunk: Uint8Array, ...rest: unknown[]): boolean;
}

interface Watch {
  socket: SocketLike;
  written: Buffer | null;
}

const wrapped = new WeakSet<SocketLike>();
let watching: Watch | null = null;

function wrap(socket: SocketLike): void {
  if (wrapped.has(socket)) return;
  wrapped.add(socket);
  const write = socket.write;
  socket.write = function (this: SocketLike, chunk: Uint8Array, ...rest: unknown[]): boolean {
    const w = watching;
    if (w !== null && w.socket === this && w.written === null && Buffer.isBuffer(chunk)) w.written = chunk;
    return write.call(this, chunk, ...rest);
  };
}

/** Bytes of the body's end compared with the frame's. */
const TAIL = 64;

/** Whether `frame` is a whole request frame (its size prefix counts the rest) that ends with the bytes of `parts`. */
export function isFrameOf(frame: Buffer, parts: readonly Buffer[]): boolean {
  let length = 0;
  for (const p of parts) length += p.length;
  const size = frame.length;
  if (size < length + 4 || frame.readUInt32BE(0) !== size - 4) return false;
  let at = size;
  let left = TAIL;
  for (let i = parts.length - 1; i >= 0 && left > 0; i--) {
    const p = parts[i];
    const n = Math.min(left, p.length);
    if (frame.compare(p, p.length - n, p.length, at - n, at) !== 0) return false;
    at -= n;
    left -= n;
  }
  return true;
}

/**
 * Runs `send` (a connection.send of the payload `parts()` makes), noting the buffer the
 * connection writes for it on `socket`; returns a function that frees that buffer (call it
 * once the broker answered), or null when none was written during the call that is the
 * request of these parts.
 */
export function sendNoted(socket: SocketLike | undefined, parts: () => readonly Buffer[], send: () => void): (() => void) | null {
  if (!socket || typeof socket.write !== "function" || watching !== null) {
    send();
    return null;
  }
  wrap(socket);
  const w: Watch = { socket, written: null };
  watching = w;
  try {
    send();
  } finally {
    watching = null;
  }
  const written = w.written;
  if (written === null || !isFrameOf(written, parts())) return null;
  return () => freeIfWhole(written);
}
