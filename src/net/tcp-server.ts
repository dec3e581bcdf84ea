/**
 * The TCP listener of the line-oriented sources (netcat, syslogtcp, multiport_syslogtcp): one
 * interface over Bun's native sockets and node:net. Under Bun a plain listener uses Bun.listen:
 * an idle connection costs about a third of a node:net socket (no stream machinery per
 * connection: ~1.4 KiB against ~4.3 KiB), reads arrive as Uint8Arrays of their own, and the
 * agent does not load node:net at all. TLS listeners (node:tls, with the client-certificate
 * checks of src/net/tls.ts) and runtimes without Bun (Deno) use node:net, through tcpNetwork
 * (src/net/network.ts), the listener the avro and thrift servers use; the simulator hands its
 * virtual Network in options.network.
 *
 * A source gives accept() a handler per connection; its methods are called with the data, the
 * peer's half-close and the close. Handlers are objects, not closures, so an idle connection
 * holds one small object per side.
 */
import { freeNow } from "../io/free-buffer.ts";
import { drained } from "./drain.ts";
import type { NetSocket, Network } from "./network.ts";
import { peerName, plainIp, type SocketAddress } from "./peer.ts";
import type { ServerTls } from "./tls.ts";

/** What a source does with one connection. */
export interface ConnectionHandler {
  /** A read: the array is the handler's to keep (it is not reused). */
  data(chunk: Uint8Array): void;
  /** The peer half-closed (sent FIN); with allowHalfOpen the connection stays writable. */
  end?(): void;
  error?(err: Error): void;
  /** The connection is gone; hadError when it ended in an error (a reset). */
  close?(hadError: boolean): void;
}

/** One accepted connection, the same under both runtimes. */
export interface TcpConnection {
  /** "1.2.3.4:5678" for logs (src/net/peer.ts), read when the connection was accepted. */
  readonly peer: string;
  /** The client's IP, IPv4-mapped addresses shown as IPv4 ("" when unknown). */
  readonly remoteIp: string;
  readonly remotePort: number;
  readonly localPort: number;
  readonly closed: boolean;
  /** Bytes written but not yet taken by the kernel. */
  readonly pendingBytes: number;
  /** Queues bytes to send; false when more than WRITE_HIGH_WATER bytes wait (see drained). */
  write(data: Uint8Array | string): boolean;
  /** Resolves once the bytes waiting to be sent are below the high-water mark (node:net) or sent (Bun), or the connection closed. */
  drained(): Promise<void>;
  pause(): void;
  resume(): void;
  /** Ends our side once what was written is sent (with `data` last). */
  end(data?: Uint8Array | string): void;
  destroy(): void;
  /**
   * The handler is done with a chunk data() gave it and keeps no view of it: its memory may go
   * back now rather than at the next collection. Under Bun each read is a buffer of its own, and
   * a fast sender's reads are freed at hundreds of MB/s: left to the collector and the
   * allocator's purge delay they set a burst's peak RSS (syslogtcp, 1 M events after 5 s idle:
   * 77-83 -> 63-67 MB). Does nothing where a chunk may share its memory (node:net, TLS) or is
   * small.
   */
  release(chunk: Uint8Array): void;
}

/** Reads smaller than this are left to the collector (not worth a call each). */
const RELEASE_MIN_BYTES = 4 * 1024;

export interface TcpServer {
  /** The port bound (useful with port 0). */
  readonly port: number;
  /** The connections open now. */
  readonly connections: ReadonlySet<TcpConnection>;
  /** Stops listening and destroys every open connection. */
  close(): Promise<void>;
}

export interface TcpListenOptions {
  host?: string;
  port: number;
  /** Keep our side open after the peer's FIN until end() (netcat answers a client that half-closed). */
  allowHalfOpen?: boolean;
  noDelay?: boolean;
  /** A TLS listener (node:tls); refused(peer, reason) for each handshake or client certificate refused. */
  tls?: { setup: ServerTls; refused(peer: string, reason: string, handshake: boolean): void } | null;
  /** An error of the listener after it was bound (node:net only; Bun reports none). */
  serverError?(err: Error): void;
  /** "node" forces node:net (tests of that path); default: Bun's sockets under Bun. */
  backend?: "bun" | "node";
  /** Listen on this network instead of the operating system's (the simulator's virtual network). */
  network?: Network;
}

/** Above this many unsent bytes write() returns false, as node:net's default highWaterMark. */
export const WRITE_HIGH_WATER = 16 * 1024;

const encoder = new TextEncoder();

/** Listens; resolves once bound, rejects with the bind error (EADDRINUSE, EACCES). */
export async function listenTcp(options: TcpListenOptions, accept: (conn: TcpConnection) => ConnectionHandler): Promise<TcpServer> {
  if (options.network) return listenOn(options.network, options, accept);
  const bun = (globalThis as { Bun?: BunApi }).Bun;
  if (!options.tls && bun && options.backend !== "node") return listenBun(bun, options, accept);
  return listenNode(options, accept);
}

// ---- Bun ----

/** The part of Bun's socket API used here. */
interface BunSocket {
  data: BunConnection;
  readonly remoteAddress?: string;
  readonly remotePort?: number;
  readonly localPort?: number;
  write(data: Uint8Array, byteOffset?: number, byteLength?: number): number;
  end(): void;
  terminate(): void;
  pause(): void;
  resume(): void;
  setNoDelay(noDelay?: boolean): boolean;
}

interface BunListener {
  readonly port: number;
  stop(closeActiveConnections?: boolean): void;
}

interface BunApi {
  listen(options: {
    hostname: string;
    port: number;
    allowHalfOpen?: boolean;
    socket: {
      binaryType: "uint8array";
      open(s: BunSocket): void;
      data(s: BunSocket, d: Uint8Array): void;
      drain(s: BunSocket): void;
      end(s: BunSocket): void;
      error(s: BunSocket, err: Error): void;
      close(s: BunSocket, err?: Error): void;
    };
  }): BunListener;
}

/** Where a connection comes from and arrives, read once when it is accepted (a reset socket may no longer tell). */
abstract class Addresses {
  readonly peer: string;
  readonly remoteIp: string;
  readonly remotePort: number;
  readonly localPort: number;

  constructor(socket: SocketAddress & { readonly localPort?: number }) {
    this.remoteIp = plainIp(socket.remoteAddress);
    this.remotePort = socket.remotePort ?? 0;
    this.localPort = socket.localPort ?? 0;
    this.peer = peerName(socket);
  }
}

class BunConnection extends Addresses implements TcpConnection {
  closed = false;
  handler: ConnectionHandler | null = null;
  /** What the kernel did not take yet, oldest first (null when nothing waits: the usual case). */
  private unsent: Uint8Array[] | null = null;
  private unsentBytes = 0;
  private ending = false;
  private waiters: (() => void)[] | null = null;
  hadError = false;

  constructor(private readonly socket: BunSocket) {
    super(socket);
  }

  get pendingBytes(): number {
    return this.unsentBytes;
  }

  write(data: Uint8Array | string): boolean {
    if (this.closed || this.ending) return false;
    const bytes = typeof data === "string" ? encoder.encode(data) : data;
    if (this.unsent === null) {
      const n = this.socket.write(bytes);
      if (n < 0) return false;
      if (n === bytes.length) return true;
      this.unsent = [bytes.subarray(n)];
      this.unsentBytes = bytes.length - n;
    } else {
      this.unsent.push(bytes);
      this.unsentBytes += bytes.length;
    }
    return this.unsentBytes <= WRITE_HIGH_WATER;
  }

  /** Bun's drain: the kernel takes more. */
  flush(): void {
    const q = this.unsent;
    while (q !== null && q.length > 0) {
      const head = q[0];
      const n = this.socket.write(head);
      if (n < 0) break;
      this.unsentBytes -= Math.max(n, 0);
      if (n < head.length) {
        q[0] = head.subarray(n);
        return;
      }
      q.shift();
    }
    this.unsent = null;
    this.unsentBytes = 0;
    if (this.ending) this.socket.end();
    this.wake();
  }

  drained(): Promise<void> {
    if (this.unsent === null || this.closed) return Promise.resolve();
    return new Promise((resolve) => (this.waiters ??= []).push(resolve));
  }

  pause(): void {
    if (!this.closed) this.socket.pause();
  }

  resume(): void {
    if (!this.closed) this.socket.resume();
  }

  /** Detaches the chunk's own ArrayBuffer (transfer(0)), which frees its memory at once. */
  release(chunk: Uint8Array): void {
    if (chunk.byteLength >= RELEASE_MIN_BYTES) freeNow(chunk);
  }

  end(data?: Uint8Array | string): void {
    if (this.closed || this.ending) return;
    if (data !== undefined) this.write(data);
    this.ending = true;
    if (this.unsent === null) this.socket.end();
  }

  destroy(): void {
    if (this.closed) return;
    this.socket.terminate();
  }

  /** Bun's close: called once. */
  closedNow(): void {
    this.closed = true;
    this.unsent = null;
    this.unsentBytes = 0;
    this.wake();
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = null;
    if (w) for (const f of w) f();
  }
}

/** Errors as node:net words them ("listen EADDRINUSE: address already in use 127.0.0.1:5140"): Bun's say only "Failed to listen". */
const LISTEN_ERRORS: Record<string, string> = {
  EADDRINUSE: "address already in use",
  EACCES: "permission denied",
  EADDRNOTAVAIL: "address not available",
};

function listenError(err: unknown, host: string, port: number): Error {
  const code = (err as { code?: unknown }).code;
  if (typeof code !== "string") return err instanceof Error ? err : new Error(String(err));
  const e = new Error(`listen ${code}: ${LISTEN_ERRORS[code] ?? (err as Error).message} ${host}:${port}`) as Error & { code: string };
  e.code = code;
  return e;
}

function listenBun(bun: BunApi, options: TcpListenOptions, accept: (conn: TcpConnection) => ConnectionHandler): TcpServer {
  if (options.host) return bunListener(bun, options.host, options, accept);
  // No host: every address, IPv6 and IPv4 as node:net does (IPv4 only where IPv6 is off).
  try {
    return bunListener(bun, "::", options, accept);
  } catch (err) {
    if ((err as { code?: string }).code === "EADDRINUSE") throw err;
    return bunListener(bun, "0.0.0.0", options, accept);
  }
}

function bunListener(bun: BunApi, host: string, options: TcpListenOptions, accept: (conn: TcpConnection) => ConnectionHandler): TcpServer {
  const open = new Set<BunConnection>();
  let listener: BunListener;
  try {
    listener = listenWith(bun, host, options, accept, open);
  } catch (err) {
    throw listenError(err, host, options.port);
  }
  return {
    port: listener.port,
    connections: open,
    async close() {
      listener.stop(false);
      for (const c of [...open]) c.destroy();
    },
  };
}

function listenWith(bun: BunApi, host: string, options: TcpListenOptions, accept: (conn: TcpConnection) => ConnectionHandler, open: Set<BunConnection>): BunListener {
  return bun.listen({
    hostname: host,
    port: options.port,
    allowHalfOpen: options.allowHalfOpen ?? false,
    socket: {
      binaryType: "uint8array",
      open(s) {
        const conn = new BunConnection(s);
        s.data = conn;
        open.add(conn);
        if (options.noDelay) s.setNoDelay(true);
        conn.handler = accept(conn);
      },
      data(s, d) {
        s.data.handler?.data(d);
      },
      drain(s) {
        s.data.flush();
      },
      end(s) {
        const conn = s.data;
        if (conn.handler?.end) conn.handler.end();
        else if (!options.allowHalfOpen) conn.end();
      },
      error(s, err) {
        const conn = s.data;
        if (!conn) return;
        conn.hadError = true;
        conn.handler?.error?.(err);
      },
      close(s, err) {
        const conn = s.data;
        if (!conn || conn.closed) return;
        open.delete(conn);
        conn.closedNow();
        conn.handler?.close?.(conn.hadError || err !== undefined);
      },
    },
  });
}

// ---- node:net (through tcpNetwork) / node:tls, or the simulator's Network ----

export class NodeConnection extends Addresses implements TcpConnection {
  /** addresses: the TCP socket under a TLS one wrapped after accept (Bun's TLSSocket may not tell them). */
  constructor(
    private readonly socket: NetSocket,
    addresses: SocketAddress & { readonly localPort?: number } = socket,
  ) {
    super(addresses);
  }

  get closed(): boolean {
    return this.socket.destroyed;
  }

  get pendingBytes(): number {
    return this.socket.writableLength;
  }

  write(data: Uint8Array | string): boolean {
    if (this.socket.destroyed || this.socket.writableEnded) return false;
    return this.socket.write(data);
  }

  /** Below the socket's high-water mark no "drain" is coming (write() returned true): resolves at once there. */
  drained(): Promise<void> {
    return drained(this.socket, this.socket.writableHighWaterMark);
  }

  pause(): void {
    this.socket.pause();
  }

  resume(): void {
    if (!this.socket.destroyed) this.socket.resume();
  }

  /** node:net's reads may be views into a larger buffer: left to the collector. */
  release(_chunk: Uint8Array): void {}

  end(data?: Uint8Array | string): void {
    if (data === undefined) this.socket.end();
    else this.socket.end(data);
  }

  destroy(): void {
    this.socket.destroy();
  }
}

/**
 * Serves one socket already accepted (and secured, when the server does its own TLS handshakes
 * after a check of the raw connection, as the avro source's ipFilter): wires it to its handler.
 */
export function serveSocket(
  socket: NetSocket,
  options: Pick<TcpListenOptions, "noDelay" | "allowHalfOpen">,
  accept: (conn: TcpConnection) => ConnectionHandler,
  closed?: () => void,
  addresses?: SocketAddress & { readonly localPort?: number },
): NodeConnection {
  if (options.noDelay) socket.setNoDelay(true);
  const conn = new NodeConnection(socket, addresses);
  const handler = accept(conn);
  socket.on("data", (chunk: Buffer) => handler.data(chunk));
  socket.on("end", () => {
    if (handler.end) handler.end();
    else if (!options.allowHalfOpen) socket.end();
  });
  socket.on("error", (err) => handler.error?.(err));
  socket.on("close", (hadError) => {
    closed?.();
    handler.close?.(hadError);
  });
  return conn;
}

/** Serves sockets of node:net or of a Network: each accepted socket is wired to its handler. */
function socketServer(options: TcpListenOptions, accept: (conn: TcpConnection) => ConnectionHandler) {
  const open = new Map<NetSocket, NodeConnection>();
  const serve = (socket: NetSocket) => {
    open.set(socket, serveSocket(socket, options, accept, () => open.delete(socket)));
  };
  const server = (port: number, stop: () => Promise<void>): TcpServer => ({
    port,
    get connections() {
      return new Set(open.values());
    },
    async close() {
      for (const s of open.keys()) s.destroy();
      await stop();
    },
  });
  return { serve, server };
}

async function listenOn(network: Network, options: TcpListenOptions, accept: (conn: TcpConnection) => ConnectionHandler): Promise<TcpServer> {
  const { serve, server } = socketServer(options, accept);
  const listener = await network.listen({ host: options.host ?? "", port: options.port, allowHalfOpen: options.allowHalfOpen, onError: options.serverError, tls: options.tls }, serve);
  return server(listener.port, () => listener.close());
}

/** node:net and node:tls, through the operating system's Network (the listener the RPC servers use too). */
async function listenNode(options: TcpListenOptions, accept: (conn: TcpConnection) => ConnectionHandler): Promise<TcpServer> {
  const { tcpNetwork } = await import("./network.ts");
  return listenOn(tcpNetwork, options, accept);
}
