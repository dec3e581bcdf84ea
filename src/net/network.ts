/**
 * The network RPC components talk through: real TCP (and TLS) in an agent, a simulated network
 * in `flume simulate` (src/simulate/network.ts), where the real avro sink and source run over
 * connections on virtual time. Components get it from their context (ComponentContext.network);
 * absent, they use TCP.
 */
import net from "node:net";
import tls from "node:tls";
import { createTlsServer, type ServerTls } from "./tls.ts";

/** What the RPC layer uses of a connected socket (a net.Socket or tls.TLSSocket is one). */
export interface NetSocket {
  readonly destroyed: boolean;
  readonly remoteAddress?: string;
  readonly remotePort?: number;
  readonly localPort?: number;
  readonly writableLength: number;
  /** end() was called: nothing more can be written. */
  readonly writableEnded: boolean;
  readonly writableHighWaterMark: number;
  setNoDelay(noDelay?: boolean): this;
  write(chunk: Uint8Array | string): boolean;
  end(chunk?: Uint8Array | string): this;
  destroy(): this;
  pause(): this;
  resume(): this;
  on(event: "data", listener: (chunk: Buffer) => void): this;
  on(event: "error", listener: (err: Error) => void): this;
  on(event: "close", listener: (hadError: boolean) => void): this;
  on(event: "end" | "connect" | "secureConnect" | "drain", listener: () => void): this;
  once(event: "error", listener: (err: Error) => void): this;
  once(event: "close", listener: (hadError: boolean) => void): this;
  once(event: "end" | "connect" | "secureConnect" | "drain", listener: () => void): this;
  off(event: "error", listener: (err: Error) => void): this;
  off(event: "close", listener: (hadError: boolean) => void): this;
  off(event: "end" | "connect" | "secureConnect" | "drain", listener: () => void): this;
}

export interface ConnectOptions {
  host: string;
  port: number;
  /** tls.connect options; absent: plain TCP. */
  tls?: tls.ConnectionOptions;
}

export interface ListenOptions {
  host: string;
  port: number;
  /** Keep our side open after the peer half-closed (the avro source answers what it got first). */
  allowHalfOpen?: boolean;
  /** Errors of the listening socket after it started. */
  onError?(err: Error): void;
  /** A TLS listener (TCP only), with refused(peer, reason, handshake) for each client refused. */
  tls?: { setup: ServerTls; refused(peer: string, reason: string, handshake: boolean): void } | null;
}

export interface NetListener {
  /** The port actually bound (useful with port 0). */
  readonly port: number;
  /** Stops accepting; open connections are the caller's to close. */
  close(): Promise<void>;
}

export interface Network {
  /** Opens a connection; the socket emits "connect" ("secureConnect" with TLS) or "error". */
  connect(options: ConnectOptions): NetSocket;
  /** Listens for connections; rejects when the address cannot be bound. */
  listen(options: ListenOptions, onConnection: (socket: NetSocket) => void): Promise<NetListener>;
}

/** The operating system's TCP. */
export const tcpNetwork: Network = {
  connect(o) {
    return o.tls ? tls.connect({ ...o.tls, host: o.host, port: o.port, servername: net.isIP(o.host) ? undefined : o.host }) : net.connect({ host: o.host, port: o.port });
  },
  listen(o, onConnection) {
    const server = o.tls ? createTlsServer(o.tls.setup, onConnection, o.tls.refused, o.allowHalfOpen) : net.createServer({ allowHalfOpen: o.allowHalfOpen ?? false }, onConnection);
    return new Promise((resolve, reject) => {
      server.once("error", reject);
      server.listen({ host: o.host || undefined, port: o.port }, () => {
        server.off("error", reject);
        server.on("error", (err) => o.onError?.(err));
        const addr = server.address();
        resolve({
          port: typeof addr === "object" && addr ? addr.port : o.port,
          close: () => new Promise<void>((done) => server.close(() => done())),
        });
      });
    });
  },
};
