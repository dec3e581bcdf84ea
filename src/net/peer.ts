/** How logs and errors name the other end of a connection. */

/** What peerName reads of a socket (node:net's, and Bun's). */
export interface SocketAddress {
  readonly remoteAddress?: string;
  readonly remotePort?: number;
}

/** Named in logs for a client the runtime has no address for (Bun reports none once a connection was reset). */
export const UNKNOWN_PEER = "an unknown peer (connection reset before its address was known)";

/**
 * "1.2.3.4:5678" for logs; IPv4-mapped IPv6 addresses shown as IPv4. Read it once when the
 * connection is accepted: after a reset the socket may no longer tell.
 */
export function peerName(socket: SocketAddress): string {
  if (!socket.remoteAddress) return UNKNOWN_PEER;
  return `${peerAddress(socket)}:${socket.remotePort ?? "?"}`;
}

export function peerAddress(socket: SocketAddress): string {
  return plainIp(socket.remoteAddress) || "unknown";
}

/** Strips the IPv4-mapped prefix Node reports on dual-stack sockets. */
export function plainIp(address: string | undefined): string {
  if (!address) return "";
  return address.startsWith("::ffff:") && address.includes(".") ? address.slice(7) : address;
}

/** The client's host name by reverse lookup (hosts file, then DNS); the IP when none. */
export async function reverseName(ip: string, port: number): Promise<string> {
  try {
    // node:dns only when a source asks for host names (clientHostnameHeader).
    const dns = process.getBuiltinModule("node:dns") as typeof import("node:dns");
    return (await dns.promises.lookupService(ip, port)).hostname;
  } catch {
    return ip;
  }
}
