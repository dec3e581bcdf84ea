/** How logs and errors name the other end of a connection. */
import { lookupService } from "node:dns/promises";

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
    return (await lookupService(ip, port)).hostname;
  } catch {
    return ip;
  }
}
