/** Waiting for a socket's unsent bytes to go (node:net, or a socket of the simulator's network). */

/** What drained() needs of a socket (a net.Socket is one; so is NetSocket). */
export interface DrainingSocket {
  readonly destroyed: boolean;
  readonly writableLength: number;
  on(event: "drain" | "close", listener: () => void): unknown;
  off(event: "drain" | "close", listener: () => void): unknown;
}

/** Resolves at once when no more than `above` bytes wait to be sent; else at the next drain, or when the socket closes. */
export function drained(socket: DrainingSocket, above = 0): Promise<void> {
  if (socket.destroyed || socket.writableLength <= above) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      socket.off("drain", done);
      socket.off("close", done);
      resolve();
    };
    socket.on("drain", done);
    socket.on("close", done);
  });
}
