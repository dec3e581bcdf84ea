import { type Event, lineEvent } from "../../core/event.ts";
import type { EventDrivenSource } from "../../core/source.ts";
import type { Logger } from "../../core/logger.ts";
import { LineSplitter } from "../../io/line-splitter.ts";
import type { Network } from "../../net/network.ts";
import { PausingReadLoop } from "../../net/read-loop.ts";
import { listenTcp, type TcpConnection, type TcpServer } from "../../net/tcp-server.ts";
import type { SourceEmitter } from "../../pipeline/emitter.ts";
import { defineComponent, type ComponentContext } from "../component.ts";
import { builtIn } from "../registry.ts";
import { BaseSource } from "./base.ts";

export interface NetcatOptions {
  bind: string;
  port: number;
  maxLineLength: number;
  ackEveryEvent: boolean;
}

const OK = new TextEncoder().encode("OK\n");

/**
 * Flume's netcat source: each newline-terminated line from a TCP client becomes an event,
 * answered "OK" once it is committed (or "FAILED: ..." when the channel refused it: the client
 * retries). The lines of one read go to the channel as one batch, and the socket is paused
 * while that batch waits, so a slow channel slows the client instead of filling memory.
 * Without acks nobody would retry: a refused batch is retried until the channel takes it.
 */
export class NetcatSource extends BaseSource implements EventDrivenSource {
  readonly kind = "event-driven";
  private server: TcpServer | null = null;
  /** The simulator's virtual network, or absent: TCP. */
  private readonly network: Network | undefined;
  constructor(
    ctx: ComponentContext,
    /** @internal */
    readonly options: NetcatOptions,
  ) {
    super(ctx, { label: `netcat source ${ctx.name}` });
    this.network = ctx.network;
  }

  /** The port actually bound (useful with port 0). */
  get port(): number {
    return this.server?.port ?? this.options.port;
  }

  async start(): Promise<void> {
    this.beginStart();
    // allowHalfOpen: a client that half-closes after its lines (printf ... | nc -N) still gets its OKs.
    this.server = await listenTcp(
      { host: this.options.bind, port: this.options.port, allowHalfOpen: true, noDelay: true, serverError: (err) => this.logger.error(`netcat source ${this.name}: ${err.message}`), network: this.network },
      (conn) => new NetcatConnection(this, conn, this.emitter, this.logger),
    );
    this.state = "START";
    this.logger.info(`netcat source ${this.name} listening on ${this.options.bind}:${this.port}`);
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = null;
    this.emitter.stop();
    await server?.close();
    this.counter.stop();
    this.state = "STOP";
  }

  /** One attempt; every line is answered OK, or FAILED with the reason (the client retries). */
  async offer(conn: TcpConnection, events: Event[]): Promise<void> {
    const refused = await this.emitter.offer(events, conn.peer);
    if (conn.closed) return;
    if (refused) conn.write(`FAILED: ${refused.message}\n`.repeat(events.length));
    else conn.write(events.length === 1 ? OK : "OK\n".repeat(events.length));
  }
}

/** One client of a netcat source: its unfinished line and the reads waiting for the channel. */
class NetcatConnection extends PausingReadLoop {
  /** Netcat's lines; Flume's max-line-length counts the newline, the splitter's does not. */
  private readonly lines: LineSplitter;
  /** An overlong line was refused: nothing more is read from this client. */
  private refused = false;

  constructor(
    private readonly source: NetcatSource,
    conn: TcpConnection,
    private readonly emitter: SourceEmitter,
    private readonly logger: Logger,
  ) {
    super(conn);
    this.lines = new LineSplitter({ maxLineLength: source.options.maxLineLength - 1, utf8: false });
    source.counter.values.OpenConnectionCount++;
  }

  protected override get halted(): boolean {
    return this.refused;
  }

  error(err: Error): void {
    this.logger.warn(`netcat source ${this.source.name}: connection from ${this.conn.peer}: ${err.message}`);
  }

  close(): void {
    this.source.counter.values.OpenConnectionCount--;
    const left = this.lines.pending;
    if (left > 0) this.logger.warn(`netcat source ${this.source.name}: ${this.conn.peer} closed with ${left} bytes after the last newline; they were not an event`);
  }

  protected failed(err: unknown): void {
    this.emitter.failed(err, `closing the connection from ${this.conn.peer}`);
  }

  /** The client half-closed: our side ends once its lines are answered. */
  protected async finish(): Promise<void> {
    this.conn.end();
  }

  protected async consume(reads: Uint8Array[]): Promise<void> {
    const conn = this.conn;
    for (const read of reads) {
      if (conn.closed || this.refused) return;
      await this.handle(read);
    }
  }

  private async handle(chunk: Uint8Array): Promise<void> {
    const { source, conn, lines } = this;
    const o = source.options;
    lines.feed(chunk);
    const events: Event[] = [];
    let tooLong = false;
    for (;;) {
      if (lines.cutInChunk(events, Infinity, Infinity, lineEvent) > 0) continue;
      if (!lines.nextSpan()) break;
      // A piece of a line over the limit: the line is refused.
      if (!lines.lastComplete) {
        tooLong = true;
        break;
      }
      events.push(lineEvent(lines.spanBytes, lines.spanStart, lines.spanEnd));
    }
    if (events.length > 0 && o.ackEveryEvent) {
      const max = source.getChannelProcessor().maxBatchSize();
      for (let i = 0; i < events.length && !conn.closed; i += max) await source.offer(conn, events.length <= max ? events : events.slice(i, i + max));
    } else if (events.length > 0 && !(await this.emitter.deliver(events, { from: conn.peer }))) {
      this.logger.warn(`netcat source ${source.name}: stopping; ${events.length} lines from ${conn.peer} that the channel did not take are dropped`);
    }
    if (tooLong) {
      source.counter.values.EventReadFail++;
      this.logger.warn(`netcat source ${source.name}: client ${conn.peer} sent a line over max-line-length ${o.maxLineLength}; closing the connection`);
      this.refused = true;
      lines.reset();
      conn.end(`FAILED: Event exceeds the maximum length (${o.maxLineLength} chars, including newline)\n`);
    }
  }
}

export const definition = defineComponent({
  ...builtIn.netcatSource,
  doc: "Listens on a TCP port; each line of text becomes an event.",
  props: {
    bind: { type: "string", required: true, doc: "Host name or IP address to bind to" },
    port: { type: "int", required: true, min: 0, max: 65535, doc: "Port to listen on" },
    "max-line-length": { type: "int", default: 512, min: 2, doc: "Maximum line length in bytes, including the newline" },
    "ack-every-event": { type: "boolean", default: true, doc: 'Answer "OK" for every event received' },
  },
  create(config, ctx) {
    return new NetcatSource(ctx, {
      bind: config.bind,
      port: config.port,
      maxLineLength: config["max-line-length"],
      ackEveryEvent: config["ack-every-event"],
    });
  },
  streamFeed: {
    address: (o) => ({ host: o.bind, port: o.port }),
    acks: (o) => o["ack-every-event"],
    line: (text) => text,
    plain: (options) => ({ options, off: [] }),
  },
});
