/**
 * A UDP listener (syslogudp, netcatudp): binds a socket (udp6 for an IPv6 host) and hands each
 * datagram on with its sender's address.
 */
import dgram from "node:dgram";
import { isIPv6 } from "node:net";
import { plainIp } from "./peer.ts";

export interface UdpListenOptions {
  host: string | undefined;
  port: number;
}

export interface UdpListener {
  /** The port bound (useful with port 0). */
  readonly port: number;
  close(): Promise<void>;
}

/**
 * Binds; resolves once bound, rejects with the bind error. `message` gets each datagram (its own
 * bytes when node handed out a slice of a much larger buffer) and the sender's IP (IPv4-mapped
 * addresses as IPv4) and port; `error` the socket's errors after that.
 */
export async function listenUdp(options: UdpListenOptions, message: (data: Uint8Array, ip: string, port: number) => void, error: (err: Error) => void): Promise<UdpListener> {
  const host = options.host || undefined;
  const socket = dgram.createSocket({ type: host && isIPv6(host) ? "udp6" : "udp4", reuseAddr: true });
  await new Promise<void>((resolve, reject) => {
    socket.once("error", reject);
    socket.bind(options.port, host, () => {
      socket.off("error", reject);
      resolve();
    });
  });
  socket.on("error", error);
  socket.on("message", (msg, rinfo) => {
    // Node may hand out a slice of a larger buffer; copy small ones so events do not pin it.
    const data: Uint8Array = msg.buffer.byteLength > msg.byteLength * 2 ? new Uint8Array(msg) : msg;
    message(data, plainIp(rinfo.address), rinfo.port);
  });
  const port = socket.address().port;
  return { port, close: () => new Promise<void>((resolve) => socket.close(() => resolve())) };
}
