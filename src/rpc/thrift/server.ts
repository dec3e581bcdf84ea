import type { Event } from "../../core/event.ts";
import type { Logger } from "../../core/logger.ts";
import { silentLogger } from "../../core/logger.ts";
import { type NetListener, type NetSocket, type Network, tcpNetwork } from "../../net/network.ts";
import { peerName } from "../../net/peer.ts";
import type { ServerTls } from "../../net/tls.ts";
import { ThriftProtocolError } from "./errors.ts";
import { ThriftFrameDecoder } from "./frame.ts";
import { createReader, encodeApplicationException, encodeStatusReply, readAppendArgs, readAppendBatchArgs, skipArgs } from "./messages.ts";
import { AppErrorType, DEFAULT_MAX_FRAME_SIZE, MessageType, METHOD_APPEND, METHOD_APPEND_BATCH, statusValue, type ThriftProtocolName, type ThriftStatus } from "./types.ts";

/** What the server does with calls; the thrift source implements it. */
export interface ThriftRequestHandler {
  append(event: Event, peer: string): Promise<ThriftStatus>;
  /** The whole batch in one channel transaction: OK once committed. */
  appendBatch(events: Event[], peer: string): Promise<ThriftStatus>;
}

export interface ThriftServerOptions {
  bind: string;
  port: number;
  protocol: ThriftProtocolName;
  /** Largest frame accepted (Flume: libthrift's 16,384,000 bytes); a larger one closes the connection. */
  maxFrameSize?: number;
  /** TLS setup (see src/net/tls.ts serverTls); absent: plain TCP. */
  tls?: ServerTls;
  /** Requests read ahead per connection before we stop reading from it (backpressure). */
  maxQueuedFrames?: number;
  logger?: Logger;
  /** Prefix for log lines, e.g. "Thrift source r1". */
  label?: string;
  onConnectionCountChange?(count: number): void;
  /** The network to listen on (plain connections only; TLS listens on TCP); default: TCP. */
  network?: Network;
}

const MAX_FAILURES_LOGGED = 3;

/**
 * Flume's ThriftSource server side: framed transport, one protocol for every connection,
 * calls on one connection served one at a time and answered in order (as libthrift's
 * nonblocking servers do), any number of connections at once.
 */
export class ThriftServer {
  private listener: NetListener | null = null;
  /** From listen() to close(): connections are served. */
  private accepting = false;
  private readonly connections = new Set<ServerConnection>();
  readonly logger: Logger;
  readonly label: string;
  readonly maxFrameSize: number;

  constructor(
    readonly handler: ThriftRequestHandler,
    readonly options: ThriftServerOptions,
  ) {
    this.logger = options.logger ?? silentLogger;
    this.label = options.label ?? "Thrift server";
    this.maxFrameSize = options.maxFrameSize ?? DEFAULT_MAX_FRAME_SIZE;
  }

  get connectionCount(): number {
    return this.connections.size;
  }

  /** Starts listening; resolves with the bound port. */
  async listen(): Promise<number> {
    this.accepting = true;
    try {
      this.listener = this.options.tls ? await this.listenTls(this.options.tls) : await this.listenPlain();
    } catch (err) {
      this.accepting = false;
      throw err;
    }
    return this.listener.port;
  }

  // allowHalfOpen: a client that half-closes after its requests still gets their answers.
  private listenPlain(): Promise<NetListener> {
    const network = this.options.network ?? tcpNetwork;
    return network.listen({ host: this.options.bind, port: this.options.port, allowHalfOpen: true, onError: (err) => this.logger.error(`${this.label}: server error: ${err.message}`) }, (socket) => this.open(socket));
  }

  private listenTls(secured: ServerTls): Promise<NetListener> {
    if (this.options.network && this.options.network !== tcpNetwork) return Promise.reject(new Error("TLS needs TCP: this network carries plain connections only"));
    const refused = (peer: string, reason: string, handshake: boolean) => this.logger.warn(handshake ? `${this.label}: TLS handshake with ${peer} failed: ${reason}` : `${this.label}: refused ${peer}: ${reason}`);
    return tcpNetwork.listen(
      { host: this.options.bind, port: this.options.port, allowHalfOpen: true, onError: (err) => this.logger.error(`${this.label}: server error: ${err.message}`), tls: { setup: secured, refused } },
      (socket) => this.open(socket),
    );
  }

  /** Stops accepting and closes every connection; answers not yet sent are dropped (the client retries). */
  async close(): Promise<void> {
    const listener = this.listener;
    this.listener = null;
    this.accepting = false;
    for (const c of this.connections) c.destroy();
    this.connections.clear();
    if (listener) await listener.close();
  }

  private open(socket: NetSocket): void {
    if (!this.accepting) {
      socket.destroy();
      return;
    }
    this.connections.add(new ServerConnection(this, socket, peerName(socket)));
    this.options.onConnectionCountChange?.(this.connections.size);
  }

  /** @internal */
  closed(conn: ServerConnection): void {
    if (this.connections.delete(conn)) this.options.onConnectionCountChange?.(this.connections.size);
  }
}

/** Why a request's first bytes cannot be a message of the configured protocol, with the likely fix. */
function protocolMismatch(frame: Buffer, expected: ThriftProtocolName): string {
  if (expected === "compact" && frame[0] === 0x80 && frame[1] === 0x01) return "the client speaks the binary protocol; set protocol = binary on this source (Flume's default is compact)";
  if (expected === "binary" && frame[0] === 0x82) return "the client speaks the compact protocol; set protocol = compact on this source";
  if (frame[0] === 0x5b) return "the client speaks TJSONProtocol, which Flume's thrift source does not accept (binary or compact only)";
  return `not a Thrift ${expected} protocol client?`;
}

class ServerConnection {
  private readonly decoder: ThriftFrameDecoder;
  private readonly queue: Buffer[] = [];
  private queuedBytes = 0;
  private busy = false;
  private paused = false;
  private failed = false;
  /** The client half-closed: end our side once its requests are answered. */
  private peerEnded = false;
  private failuresLogged = 0;
  private readonly maxQueued: number;
  private readonly protocol: ThriftProtocolName;

  constructor(
    private readonly server: ThriftServer,
    private readonly socket: NetSocket,
    readonly peer: string,
  ) {
    this.decoder = new ThriftFrameDecoder(server.maxFrameSize);
    this.maxQueued = server.options.maxQueuedFrames ?? 16;
    this.protocol = server.options.protocol;
    socket.setNoDelay(true);
    socket.on("data", (chunk: Buffer) => this.receive(chunk));
    socket.on("end", () => {
      this.peerEnded = true;
      if (!this.busy) socket.end();
    });
    socket.on("error", (err) => this.fail(`socket error: ${err.message}`));
    socket.on("close", () => {
      if (this.decoder.midFrame && !this.failed) server.logger.warn(`${server.label}: connection from ${peer} closed in the middle of a frame (truncated request dropped)`);
      server.closed(this);
    });
  }

  destroy(): void {
    this.failed = true;
    this.socket.destroy();
  }

  private get open(): boolean {
    return !this.failed && !this.socket.destroyed;
  }

  private receive(chunk: Buffer): void {
    if (this.failed) return;
    let frames: Buffer[];
    try {
      frames = this.decoder.push(chunk);
    } catch (err) {
      this.fail((err as Error).message);
      return;
    }
    if (frames.length === 0) return;
    for (const f of frames) {
      this.queue.push(f);
      this.queuedBytes += f.length;
    }
    // Read ahead a bounded number of requests (and bytes) while one waits for the channel.
    if (!this.paused && (this.queue.length >= this.maxQueued || this.queuedBytes > this.server.maxFrameSize)) {
      this.paused = true;
      this.socket.pause();
    }
    if (!this.busy) this.pump().catch((err: Error) => this.fail(`internal error: ${err.message}`));
  }

  private async pump(): Promise<void> {
    this.busy = true;
    try {
      while (this.queue.length > 0 && this.open) {
        const frame = this.queue.shift() as Buffer;
        this.queuedBytes -= frame.length;
        const answer = await this.respond(frame);
        if (answer === null || !this.open) break;
        this.socket.write(answer);
        // A client that pipelines calls without reading the answers must not make us buffer them without bound.
        if (this.socket.writableLength > this.socket.writableHighWaterMark) await this.drained();
        if (this.paused && this.queue.length < this.maxQueued / 2 && this.queuedBytes <= this.server.maxFrameSize / 2) {
          this.paused = false;
          this.socket.resume();
        }
      }
    } finally {
      this.busy = false;
      if (this.peerEnded && this.open) this.socket.end();
    }
  }

  private drained(): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.socket.off("drain", done);
        this.socket.off("close", done);
        resolve();
      };
      this.socket.on("drain", done);
      this.socket.on("close", done);
    });
  }

  /** One request frame in, one answer frame out; null when the connection must close. */
  private async respond(frame: Buffer): Promise<Buffer | null> {
    const protocol = this.protocol;
    const r = createReader(protocol, frame);
    let header;
    try {
      header = r.readMessageBegin();
    } catch (err) {
      // As libthrift: a message header that cannot be read ends the connection.
      this.fail(`${(err as Error).message}: ${protocolMismatch(frame, protocol)}`);
      return null;
    }
    const { name, seqid } = header;
    if (header.type !== MessageType.CALL && header.type !== MessageType.ONEWAY) {
      return this.refuse(name, seqid, AppErrorType.INVALID_MESSAGE_TYPE, `Invalid message type ${header.type} for ${name}: expected a call`);
    }
    if (name !== METHOD_APPEND_BATCH && name !== METHOD_APPEND) {
      try {
        skipArgs(r);
      } catch {
        // The answer is the same whatever the arguments were.
      }
      return this.refuse(name, seqid, AppErrorType.UNKNOWN_METHOD, `Invalid method name: '${name}'`);
    }
    let status: ThriftStatus;
    try {
      if (name === METHOD_APPEND_BATCH) {
        const events = readAppendBatchArgs(r);
        status = await this.server.handler.appendBatch(events, this.peer);
      } else {
        const event = readAppendArgs(r);
        status = await this.server.handler.append(event, this.peer);
      }
    } catch (err) {
      if (err instanceof ThriftProtocolError) return this.refuse(name, seqid, AppErrorType.PROTOCOL_ERROR, err.message);
      this.logFailure(`${name} failed: ${(err as Error).message}`);
      // As libthrift's ProcessFunction: the cause stays in our log, the client learns the method.
      return encodeApplicationException(protocol, name, seqid, AppErrorType.INTERNAL_ERROR, `Internal error processing ${name}`);
    }
    return encodeStatusReply(protocol, name, seqid, statusValue(status));
  }

  /** A TApplicationException answer; the connection stays open, as in libthrift. */
  private refuse(name: string, seqid: number, type: number, message: string): Buffer {
    this.logFailure(`request ${JSON.stringify(name)} refused: ${message}`);
    return encodeApplicationException(this.protocol, name, seqid, type, message);
  }

  private logFailure(message: string): void {
    if (this.failuresLogged >= MAX_FAILURES_LOGGED) return;
    const more = ++this.failuresLogged === MAX_FAILURES_LOGGED ? " (further failures on this connection are answered but not logged)" : "";
    this.server.logger.warn(`${this.server.label}: request from ${this.peer} failed: ${message}${more}`);
  }

  private fail(reason: string): void {
    if (this.failed) return;
    this.failed = true;
    this.server.logger.warn(`${this.server.label}: closing connection from ${this.peer}: ${reason}`);
    this.socket.destroy();
  }
}
