/** How the RPC clients (avro, thrift) connect: within connect-timeout, failing with the RPC errors. */
import type tls from "node:tls";
import type { Clock } from "../core/clock.ts";
import { systemClock } from "../core/clock.ts";
import { connectWithin } from "../net/connect.ts";
import type { NetSocket, Network } from "../net/network.ts";
import { RpcConnectionError, RpcTimeoutError } from "./errors.ts";

export interface RpcConnectOptions {
  host: string;
  port: number;
  /** Milliseconds for TCP (+ TLS) to be set up (Flume: connect-timeout, 20000). */
  connectTimeout?: number;
  tls?: tls.ConnectionOptions;
  clock?: Clock;
  network?: Network;
}

/** Connects to `peer` ("Avro source", "thrift source") and resolves with connected(socket), called as it connects. */
export function connectRpc<T>(o: RpcConnectOptions, peer: string, connected: (socket: NetSocket) => T): Promise<T> {
  const timeout = o.connectTimeout ?? 20000;
  const where = `${o.host}:${o.port}`;
  return connectWithin(
    {
      host: o.host,
      port: o.port,
      tls: o.tls,
      network: o.network,
      timeout,
      clock: o.clock ?? systemClock,
      timedOut: () => new RpcTimeoutError(`could not connect to ${peer} at ${where} within ${timeout} ms (connect-timeout)`),
      failed: (err) => new RpcConnectionError(`cannot connect to ${peer} at ${where}: ${err.message}`, { cause: err }),
    },
    connected,
  );
}
