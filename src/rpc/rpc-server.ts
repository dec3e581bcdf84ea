/**
 * What the avro and thrift servers share: their log prefix, the connections they serve
 * (counted for the source's OpenConnectionCount) and whether they still accept. How they listen
 * and speak differs; each connection runs on the net layer's read loop (src/net/request-loop.ts).
 */
import type { Logger } from "../core/logger.ts";
import { silentLogger } from "../core/logger.ts";
import type { RequestLoop } from "../net/request-loop.ts";
import type { ConnectionHandler, TcpConnection } from "../net/tcp-server.ts";

/** What a connection accepted after close() began gets: nothing is read from it. */
const REFUSED: ConnectionHandler = { data() {} };

export interface RpcServerOptions {
  bind: string;
  port: number;
  logger?: Logger;
  /** Prefix for log lines, e.g. "Avro source r1". */
  label?: string;
  onConnectionCountChange?(count: number): void;
}

export abstract class RpcServer<C extends RequestLoop<unknown>, O extends RpcServerOptions> {
  /** From listen() to close(): connections are served. */
  protected accepting = false;
  protected readonly connections = new Set<C>();
  readonly logger: Logger;
  readonly label: string;

  constructor(
    readonly options: O,
    defaultLabel: string,
  ) {
    this.logger = options.logger ?? silentLogger;
    this.label = options.label ?? defaultLabel;
  }

  get connectionCount(): number {
    return this.connections.size;
  }

  /** Errors of the listener after it was bound. */
  protected readonly serverError = (err: Error): void => this.logger.error(`${this.label}: server error: ${err.message}`);

  /** A connection's loop, made by `serve`; once close() began, the connection is destroyed instead. */
  protected serve(conn: TcpConnection, loop: (conn: TcpConnection) => C): ConnectionHandler {
    if (!this.accepting) {
      conn.destroy();
      return REFUSED;
    }
    const served = loop(conn);
    this.connections.add(served);
    this.options.onConnectionCountChange?.(this.connections.size);
    return served;
  }

  /** @internal A connection closed. */
  closed(conn: C): void {
    if (this.connections.delete(conn)) this.options.onConnectionCountChange?.(this.connections.size);
  }

  /** Stops accepting and destroys every connection; answers not yet sent are dropped (the client retries). */
  protected dropConnections(): void {
    this.accepting = false;
    for (const c of this.connections) c.destroy();
    this.connections.clear();
  }
}
