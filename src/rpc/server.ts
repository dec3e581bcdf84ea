import net from "node:net";
import zlib from "node:zlib";
import { type ServerTls, TlsHandshakes } from "../net/tls.ts";
import type { Event } from "../core/event.ts";
import { AvroReader, AvroWriter } from "./binary.ts";
import { RpcProtocolError } from "./errors.ts";
import { DEFAULT_FRAME_LIMITS, encodeFrame, FrameDecoder, frameSize, joinBuffers, type Frame, type FrameLimits } from "./frame.ts";
import type { IpFilter } from "./ip-filter.ts";
import { readHandshakeRequest, writeHandshakeResponse, type HandshakeRequest, type HandshakeResponse } from "./messages.ts";
import { MESSAGE_APPEND, MESSAGE_APPEND_BATCH, PROTOCOL_HASH, PROTOCOL_TEXT, STATUS_SYMBOLS, type RpcStatus } from "./protocol.ts";
import { localProtocol, parseRemoteProtocol, type RemoteProtocol } from "./remote-protocol.ts";
import { peerAddress, peerName } from "../net/peer.ts";
import type { CompressionType } from "./transport.ts";
import { type NetListener, type NetSocket, type Network, tcpNetwork } from "../net/network.ts";
import { RequestLoop } from "../net/request-loop.ts";
import { serveSocket, type TcpConnection } from "../net/tcp-server.ts";
import { RpcServer, type RpcServerOptions } from "./rpc-server.ts";

/** What the server does with calls; the avro source implements it. */
export interface RpcRequestHandler {
  appendBatch(events: Event[], peer: string): Promise<RpcStatus>;
  append(event: Event, peer: string): Promise<RpcStatus>;
}

export interface AvroRpcServerOptions extends RpcServerOptions {
  compression?: CompressionType;
  /** TLS setup (see src/net/tls.ts); absent: plain TCP. */
  tls?: ServerTls;
  ipFilter?: IpFilter;
  limits?: FrameLimits;
  /** Request bytes buffered per connection before we stop reading from it; default: the max frame size + 1 MiB. */
  maxBufferedBytes?: number;
  /** The network to listen on (the simulator's); default: TCP. */
  network?: Network;
}

const EMPTY = Buffer.alloc(0);
/** Room beyond one frame of the maximum size, so the next request can arrive while one is served. */
const BUFFER_SLACK = 1024 * 1024;
const META_EMPTY = Buffer.from([0]);
/** Client protocols remembered; clients with a new hash each time must not grow memory without bound. */
const MAX_CACHED_PROTOCOLS = 64;

/**
 * Client protocols by hash, least recently used dropped first; Flume's own protocol is always
 * known. A dropped client is answered NONE and resends its protocol, as for any unknown hash.
 */
export class ProtocolCache {
  private readonly entries = new Map<string, RemoteProtocol>();

  constructor(private readonly max: number) {}

  /** Entries held, Flume's own protocol included. */
  get size(): number {
    return this.entries.size + 1;
  }

  get(hashHex: string): RemoteProtocol | undefined {
    const local = localProtocol();
    if (hashHex === local.hashHex) return local;
    const found = this.entries.get(hashHex);
    if (found) {
      // Map order is insertion order: re-inserting marks it most recently used.
      this.entries.delete(hashHex);
      this.entries.set(hashHex, found);
    }
    return found;
  }

  set(hashHex: string, protocol: RemoteProtocol): void {
    if (hashHex === localProtocol().hashHex) return;
    this.entries.delete(hashHex);
    this.entries.set(hashHex, protocol);
    if (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value as string);
  }
}

/**
 * Avro IPC over Netty framing, as Avro's NettyServer + Responder: a handshake once per
 * connection, then calls answered in order with their serial.
 */
export class AvroRpcServer extends RpcServer<AvroConnection, AvroRpcServerOptions> {
  private server: NetListener | null = null;
  /** TLS on accepted connections (null: plain TCP); close() drops those still in their handshake. */
  private handshakes: TlsHandshakes | null = null;
  /** Protocols announced by clients, by hash (Avro's Responder keeps the same cache, unbounded). */
  readonly protocols = new ProtocolCache(MAX_CACHED_PROTOCOLS);

  constructor(
    readonly handler: RpcRequestHandler,
    options: AvroRpcServerOptions,
  ) {
    super(options, "Avro RPC server");
  }

  /** Request bytes buffered now over all connections. */
  get bufferedBytes(): number {
    let n = 0;
    for (const c of this.connections) n += c.bufferedBytes;
    return n;
  }

  /** @internal The most request bytes one open connection has held at once. */
  get peakBufferedBytes(): number {
    let n = 0;
    for (const c of this.connections) n = Math.max(n, c.peakBufferedBytes);
    return n;
  }

  /** Starts listening; resolves with the bound port. */
  listen(): Promise<number> {
    if (this.options.tls) this.handshakes = new TlsHandshakes(this.options.tls);
    // Plain TCP even with TLS on: as Flume's Netty pipeline, the ipFilter decides on the raw
    // connection and only allowed peers get a TLS handshake (see admit()).
    // allowHalfOpen: a client that half-closes after its requests still gets their answers.
    const network = this.options.network ?? tcpNetwork;
    this.accepting = true;
    return network
      .listen({ host: this.options.bind, port: this.options.port, allowHalfOpen: true, onError: this.serverError }, (socket) => this.accept(socket))
      .then(
        (listener) => {
          this.server = listener;
          return listener.port;
        },
        (err: unknown) => {
          this.accepting = false;
          throw err;
        },
      );
  }

  /** Stops accepting, closes every connection; in-flight answers are dropped (the client retries). */
  async close(): Promise<void> {
    const server = this.server;
    this.server = null;
    this.dropConnections();
    this.handshakes?.dropAll();
    if (server) await server.close();
  }

  private accept(socket: NetSocket): void {
    // Read once now: a socket reset later (or while the filter runs) may no longer tell.
    const peer = peerName(socket);
    socket.setNoDelay(true);
    const filter = this.options.ipFilter;
    if (!filter) return this.admit(socket, peer);
    socket.pause();
    // Until the transport owns the socket, a reset must not surface as an unhandled error.
    const ignore = () => {};
    socket.on("error", ignore);
    filter.allows(peerAddress(socket)).then(
      (ok) => {
        socket.off("error", ignore);
        if (!ok) {
          // Before any TLS work: a denied peer costs no handshake (Flume's filter runs ahead of its SslHandler).
          this.logger.info(`${this.label}: connection from ${peer} refused by ipFilterRules`);
          socket.destroy();
        } else if (!socket.destroyed) {
          this.admit(socket, peer);
        }
      },
      () => socket.destroy(),
    );
  }

  /** An allowed TCP connection: served at once in plain mode, after the TLS handshake otherwise. */
  private admit(socket: NetSocket, peer: string): void {
    if (this.handshakes === null) {
      this.open(socket, socket);
      socket.resume();
      return;
    }
    // TLS wraps a TCP socket; the simulator's network carries plain connections only.
    if (!(socket instanceof net.Socket)) {
      this.logger.error(`${this.label}: TLS needs a TCP connection; closing the one from ${peer}`);
      socket.destroy();
      return;
    }
    this.handshakes.secure(
      socket,
      (secured) => this.open(secured, socket),
      (reason) => this.logger.warn(`${this.label}: TLS handshake with ${peer} failed: ${reason}`),
    );
  }

  /** Serves a connection on the net layer's read loop; addresses: the TCP socket (under TLS, the one it wraps). */
  private open(socket: NetSocket, addresses: NetSocket): void {
    serveSocket(socket, { allowHalfOpen: true, noDelay: true }, (conn) => this.serve(conn, (c) => new AvroConnection(this, c)), undefined, addresses);
  }
}

interface ParsedRequest {
  handshake: HandshakeRequest | null;
  name: string;
  params: AvroReader;
}

/**
 * One client, on the net layer's read loop. With deflate, each direction is one zlib stream for
 * the whole connection, sync-flushed after every frame, as Netty's ZlibEncoder/ZlibDecoder in
 * Flume's pipeline (TLS, when on, carries the compressed bytes); the inflater is paused with
 * the connection, so compressed bytes already read do not go on inflating (a deflate bomb).
 */
class AvroConnection extends RequestLoop<Frame> {
  private remote: RemoteProtocol | null = null;
  private readonly deflater: zlib.Deflate | null = null;
  private readonly inflater: zlib.Inflate | null = null;

  constructor(
    private readonly server: AvroRpcServer,
    conn: TcpConnection,
  ) {
    const o = server.options;
    const limits = o.limits ?? DEFAULT_FRAME_LIMITS;
    super(conn, new FrameDecoder(limits), {
      logger: server.logger,
      label: server.label,
      sizeOf: frameSize,
      readAheadBytes: o.maxBufferedBytes ?? limits.maxFrameBytes + BUFFER_SLACK,
      closed: () => {
        this.deflater?.destroy();
        this.inflater?.destroy();
        server.closed(this);
      },
    });
    if (o.compression === "deflate") {
      const deflater = zlib.createDeflate({ level: 6 });
      deflater.on("data", (chunk: Buffer) => conn.write(chunk));
      deflater.on("error", (err) => this.abort(err.message));
      const inflater = zlib.createInflate();
      inflater.on("data", (chunk: Buffer) => super.data(chunk));
      inflater.on("error", (err) => this.abort(`invalid deflate stream from ${conn.peer}: ${err.message}`));
      this.deflater = deflater;
      this.inflater = inflater;
    }
  }

  override data(chunk: Uint8Array): void {
    if (this.inflater) {
      if (!this.conn.closed) this.inflater.write(chunk);
    } else {
      super.data(chunk);
    }
  }

  override end(): void {
    // With deflate, bytes written to the inflater may still be on their way to data().
    if (this.inflater) this.inflater.flush(zlib.constants.Z_SYNC_FLUSH, () => setImmediate(() => super.end()));
    else super.end();
  }

  protected override get stagedBytes(): number {
    return this.inflater?.readableLength ?? 0;
  }

  protected override pauseReading(): void {
    super.pauseReading();
    this.inflater?.pause();
  }

  protected override resumeReading(): void {
    super.resumeReading();
    this.inflater?.resume();
  }

  protected override send(answer: Uint8Array): void {
    if (!this.deflater) return super.send(answer);
    this.deflater.write(answer);
    this.deflater.flush(zlib.constants.Z_SYNC_FLUSH);
  }

  /** Ends the connection after pending writes (finishing the zlib stream: its last bytes arrive through "data" before "end"). */
  protected override async finish(): Promise<void> {
    const deflater = this.deflater;
    if (!deflater) return super.finish();
    deflater.once("end", () => this.conn.end());
    deflater.end();
  }

  /** One request frame in, one response frame out (Avro's Responder.respond). */
  protected async respond(frame: Frame): Promise<Buffer> {
    const { serial } = frame;
    let handshakeBytes: Buffer = EMPTY;
    try {
      const req = this.parse(frame.buffers, this.remote === null);
      if (this.remote === null) {
        const hs = req.handshake as HandshakeRequest;
        const { response, remote } = await this.handshake(hs);
        const w = new AvroWriter(response.serverProtocol ? PROTOCOL_TEXT.length + 64 : 16);
        writeHandshakeResponse(w, response);
        handshakeBytes = w.finish();
        if (remote === null) return encodeFrame(serial, [handshakeBytes]);
        this.remote = remote;
      }
      if (req.name === "") return encodeFrame(serial, [handshakeBytes]); // handshake-only ping
      const remote = this.remote;
      if (!remote.has(req.name)) throw new RpcProtocolError(`No such remote message: ${req.name}`);
      let status: RpcStatus;
      if (req.name === MESSAGE_APPEND_BATCH) {
        const events = remote.readAppendBatch(req.params);
        status = await this.server.handler.appendBatch(events, this.conn.peer);
      } else if (req.name === MESSAGE_APPEND) {
        const event = remote.readAppend(req.params);
        status = await this.server.handler.append(event, this.conn.peer);
      } else {
        throw new RpcProtocolError(`No message named ${req.name} in AvroSourceProtocol`);
      }
      const result = Buffer.from([0, STATUS_SYMBOLS.indexOf(status) * 2]);
      return encodeFrame(serial, [handshakeBytes, META_EMPTY, result]);
    } catch (err) {
      // As Avro's Responder: a system error goes back to the caller, the connection stays up.
      const e = err as Error;
      this.logFailure(e.message);
      const w = new AvroWriter(64 + e.message.length * 3);
      w.boolean(true);
      w.long(0); // union ["string"]: Avro's system error
      w.string(`${e instanceof RpcProtocolError ? "org.apache.avro.AvroRuntimeException" : e.name}: ${e.message}`);
      return encodeFrame(serial, [handshakeBytes, META_EMPTY, w.finish()]);
    }
  }

  private async handshake(hs: HandshakeRequest): Promise<{ response: HandshakeResponse; remote: RemoteProtocol | null }> {
    const protocols = this.server.protocols;
    const clientHex = hs.clientHash.toString("hex");
    let remote = protocols.get(clientHex) ?? null;
    if (remote === null && hs.clientProtocol !== null) {
      remote = await parseRemoteProtocol(hs.clientProtocol);
      protocols.set(clientHex, remote);
    }
    const serverMatches = PROTOCOL_HASH.equals(hs.serverHash);
    const match = remote === null ? "NONE" : serverMatches ? "BOTH" : "CLIENT";
    const response: HandshakeResponse = {
      match,
      serverProtocol: match === "BOTH" ? null : PROTOCOL_TEXT,
      serverHash: match === "BOTH" ? null : PROTOCOL_HASH,
      meta: null,
    };
    return { response, remote };
  }

  /**
   * Splits a request into handshake, name and parameters. Java clients put the parameters in
   * their own buffer, so the common case reads each buffer in place; any other split is
   * concatenated first.
   */
  private parse(buffers: Buffer[], withHandshake: boolean): ParsedRequest {
    if (buffers.length === 0) throw new RpcProtocolError("empty request frame");
    const first = new AvroReader(buffers[0]);
    if (buffers.length === 2) {
      try {
        const head = readHead(first, withHandshake);
        if (first.remaining() === 0) return { ...head, params: new AvroReader(buffers[1]) };
      } catch (err) {
        if (!(err instanceof RpcProtocolError)) throw err;
      }
    }
    const whole = new AvroReader(buffers.length === 1 ? buffers[0] : joinBuffers(buffers));
    return { ...readHead(whole, withHandshake), params: whole };
  }
}

function readHead(r: AvroReader, withHandshake: boolean): { handshake: HandshakeRequest | null; name: string } {
  const handshake = withHandshake ? readHandshakeRequest(r) : null;
  r.bytesMap(); // call metadata: Flume sends none and reads none
  const name = r.string();
  return { handshake, name };
}
