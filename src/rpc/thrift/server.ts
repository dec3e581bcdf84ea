import type { Event } from "../../core/event.ts";
import { type Network, tcpNetwork } from "../../net/network.ts";
import { RequestLoop } from "../../net/request-loop.ts";
import { listenTcp, type TcpConnection, type TcpServer } from "../../net/tcp-server.ts";
import { RpcServer, type RpcServerOptions } from "../rpc-server.ts";
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

export interface ThriftServerOptions extends RpcServerOptions {
  protocol: ThriftProtocolName;
  /** Largest frame accepted (Flume: libthrift's 16,384,000 bytes); a larger one closes the connection. */
  maxFrameSize?: number;
  /** TLS setup (see src/net/tls.ts serverTls); absent: plain TCP. */
  tls?: ServerTls;
  /** The network to listen on (plain connections only; TLS listens on TCP); default: TCP. */
  network?: Network;
}

/**
 * Flume's ThriftSource server side: framed transport, one protocol for every connection,
 * calls on one connection served one at a time and answered in order (as libthrift's
 * nonblocking servers do), any number of connections at once. Listening and each connection's
 * read loop are the net layer's (src/net/tcp-server.ts, request-loop.ts).
 */
export class ThriftServer extends RpcServer<ThriftConnection, ThriftServerOptions> {
  private server: TcpServer | null = null;
  readonly maxFrameSize: number;

  constructor(
    readonly handler: ThriftRequestHandler,
    options: ThriftServerOptions,
  ) {
    super(options, "Thrift server");
    this.maxFrameSize = options.maxFrameSize ?? DEFAULT_MAX_FRAME_SIZE;
  }

  /** Starts listening; resolves with the bound port. */
  async listen(): Promise<number> {
    const o = this.options;
    if (o.tls && o.network && o.network !== tcpNetwork) throw new Error("TLS needs TCP: this network carries plain connections only");
    const refused = (peer: string, reason: string, handshake: boolean) => this.logger.warn(handshake ? `${this.label}: TLS handshake with ${peer} failed: ${reason}` : `${this.label}: refused ${peer}: ${reason}`);
    this.accepting = true;
    try {
      // allowHalfOpen: a client that half-closes after its requests still gets their answers.
      this.server = await listenTcp(
        {
          host: o.bind,
          port: o.port,
          allowHalfOpen: true,
          noDelay: true,
          tls: o.tls ? { setup: o.tls, refused } : null,
          serverError: this.serverError,
          network: o.tls ? undefined : o.network,
        },
        (conn) => this.serve(conn, (c) => new ThriftConnection(this, c)),
      );
    } catch (err) {
      this.accepting = false;
      throw err;
    }
    return this.server.port;
  }

  /** Stops accepting and closes every connection; answers not yet sent are dropped (the client retries). */
  async close(): Promise<void> {
    const server = this.server;
    this.server = null;
    this.dropConnections();
    if (server) await server.close();
  }
}

/** Why a request's first bytes cannot be a message of the configured protocol, with the likely fix. */
function protocolMismatch(frame: Buffer, expected: ThriftProtocolName): string {
  if (expected === "compact" && frame[0] === 0x80 && frame[1] === 0x01) return "the client speaks the binary protocol; set protocol = binary on this source (Flume's default is compact)";
  if (expected === "binary" && frame[0] === 0x82) return "the client speaks the compact protocol; set protocol = compact on this source";
  if (frame[0] === 0x5b) return "the client speaks TJSONProtocol, which Flume's thrift source does not accept (binary or compact only)";
  return `not a Thrift ${expected} protocol client?`;
}

/** One client: framed requests answered in order on the net layer's read loop. */
class ThriftConnection extends RequestLoop<Buffer> {
  private readonly protocol: ThriftProtocolName;

  constructor(
    private readonly server: ThriftServer,
    conn: TcpConnection,
  ) {
    super(conn, new ThriftFrameDecoder(server.maxFrameSize), { logger: server.logger, label: server.label, sizeOf: (frame) => frame.length, readAheadBytes: server.maxFrameSize, closed: () => server.closed(this) });
    this.protocol = server.options.protocol;
  }

  /** One request frame in, one answer frame out; a message header that cannot be read ends the connection (as libthrift). */
  protected async respond(frame: Buffer): Promise<Buffer> {
    const protocol = this.protocol;
    const r = createReader(protocol, frame);
    let header;
    try {
      header = r.readMessageBegin();
    } catch (err) {
      throw new ThriftProtocolError(`${(err as Error).message}: ${protocolMismatch(frame, protocol)}`);
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
        status = await this.server.handler.appendBatch(events, this.conn.peer);
      } else {
        const event = readAppendArgs(r);
        status = await this.server.handler.append(event, this.conn.peer);
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
}
