/**
 * Connecting within a time limit (the RPC clients' connect-timeout), on TCP, TLS or the
 * simulator's network, with Nagle off (an RPC client writes whole requests).
 */
import type { Clock } from "../core/clock.ts";
import { type ConnectOptions, type NetSocket, type Network, tcpNetwork } from "./network.ts";

export interface TimedConnectOptions extends ConnectOptions {
  /** Default: the operating system's TCP. */
  network?: Network;
  /** Milliseconds for TCP (and the TLS handshake) to be set up. */
  timeout: number;
  clock: Clock;
  /** The error when the time is up (the caller's words and error class). */
  timedOut(): Error;
  /** The error when the connection failed. */
  failed(err: Error): Error;
}

/**
 * Connects and resolves with what `connected` makes of the socket, called as it connects (so
 * its listeners are on before anything else can happen); rejects with timedOut() or
 * failed(err), the socket destroyed.
 */
export function connectWithin<T>(o: TimedConnectOptions, connected: (socket: NetSocket) => T): Promise<T> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const socket = (o.network ?? tcpNetwork).connect({ host: o.host, port: o.port, tls: o.tls });
    socket.setNoDelay(true);
    const settle = (err: Error | null) => {
      if (settled) return;
      settled = true;
      o.clock.clearTimeout(timer);
      socket.off("error", onError);
      if (err === null) return resolve(connected(socket));
      socket.destroy();
      reject(err);
    };
    const timer = o.clock.setTimeout(() => settle(o.timedOut()), o.timeout);
    const onError = (err: Error) => settle(o.failed(err));
    socket.once("error", onError);
    socket.once(o.tls ? "secureConnect" : "connect", () => settle(null));
  });
}
