/** How logs and errors name the other end of a connection. */
/** What a name is read from: a net.Socket, or any socket with its peer's address. */
type Socket = { readonly remoteAddress?: string; readonly remotePort?: number };

/** Named in logs for a client the runtime has no address for (Bun reports none once a connection was reset). */
export const UNKNOWN_PEER = "an unknown peer (connection reset before its address was known)";

/**
 * "1.2.3.4:5678" for logs; IPv4-mapped IPv6 addresses shown as IPv4. Read it once when the
 * connection is accepted: after a reset the socket may no longer tell.
 */
export function peerName(socket: Socket): string {
  if (!socket.remoteAddress) return UNKNOWN_PEER;
  return `${peerAddress(socket)}:${socket.remotePort ?? "?"}`;
}

export function peerAddress(socket: Socket): string {
  const a = socket.remoteAddress ?? "unknown";
  return a.startsWith("::ffff:") ? a.slice(7) : a;
}
