import type { Event } from "../../../core/event.ts";
import type { Logger } from "../../../core/logger.ts";
import type { EventDrivenSource } from "../../../core/source.ts";
import { reverseName } from "../../../net/peer.ts";
import type { Network } from "../../../net/network.ts";
import { PausingReadLoop } from "../../../net/read-loop.ts";
import { listenTcp, type TcpConnection, type TcpServer } from "../../../net/tcp-server.ts";
import type { ServerTls } from "../../../net/tls.ts";
import type { SourceEmitter } from "../../../pipeline/emitter.ts";
import type { ComponentContext } from "../../component.ts";
import { BaseSource } from "../base.ts";
import { FrameList, SyslogFrameDecoder } from "./framing.ts";
import { EVENT_STATUS, type ParseOptions, type SyslogCharset, SyslogEventParser } from "./parse.ts";

export interface SyslogTcpOptions {
  /** Display name in logs ("syslogtcp", "multiport_syslogtcp"). */
  type: string;
  host: string | undefined;
  ports: number[];
  eventSize: number;
  /** Most events per channel batch (multiport's batchSize); Infinity for one batch per read. */
  batchSize: number;
  parse: Omit<ParseOptions, "now">;
  /** Charset per local port (multiport's charset.port.<port>); parse.charset otherwise. */
  portCharsets?: Record<string, SyslogCharset>;
  portHeader?: string;
  clientIPHeader?: string;
  clientHostnameHeader?: string;
  tls: ServerTls | null;
}

/**
 * Flume's syslogtcp and multiport_syslogtcp: one or more TCP listeners, each message one event.
 * The messages of one read go to the channel together; the connection is paused while they
 * wait (retried until the channel takes them), so a slow channel slows the sender rather than
 * filling memory or dropping messages as Flume does.
 */
export class SyslogTcpSource extends BaseSource implements EventDrivenSource {
  readonly kind = "event-driven";
  /** @internal */
  stopping = false;
  private servers: TcpServer[] = [];
  /** Batches on their way to the channel; stop() waits for them so none is cut off mid-commit. */
  private readonly inFlight = new Set<Promise<void>>();
  /** One parser per charset, shared by the connections (its caches are per message stream, not per client). */
  private readonly parsers = new Map<SyslogCharset | undefined, SyslogEventParser>();
  /** The simulator's virtual network, or absent: TCP. */
  private readonly network: Network | undefined;

  constructor(
    ctx: ComponentContext,
    readonly options: SyslogTcpOptions,
  ) {
    super(ctx, { label: `${options.type} source ${ctx.name}` });
    this.network = ctx.network;
  }

  /** @internal */
  describe(): string {
    return `${this.options.type} source ${this.name}`;
  }

  /** The ports actually bound, in configuration order (useful with port 0). */
  get ports(): number[] {
    return this.servers.map((s) => s.port);
  }

  get port(): number {
    return this.ports[0] ?? 0;
  }

  async start(): Promise<void> {
    this.stopping = false;
    this.beginStart();
    try {
      for (const port of this.options.ports) this.servers.push(await this.listen(port));
    } catch (err) {
      await this.closeServers();
      throw err;
    }
    this.state = "START";
    this.logger.info(`${this.describe()} listening on ${this.options.host || "*"}:${this.ports.join(",")}${this.options.tls ? " (TLS)" : ""}`);
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.emitter.stop();
    for (const s of this.servers) for (const c of s.connections) c.destroy();
    await Promise.allSettled([...this.inFlight]);
    await this.closeServers();
    this.counter.stop();
    this.state = "STOP";
  }

  private async closeServers(): Promise<void> {
    const servers = this.servers;
    this.servers = [];
    await Promise.all(servers.map((s) => s.close()));
  }

  private listen(port: number): Promise<TcpServer> {
    const secured = this.options.tls;
    return listenTcp(
      {
        host: this.options.host,
        port,
        tls: secured ? { setup: secured, refused: (peer, reason) => this.logger.warn(`${this.describe()}: TLS handshake with ${peer} failed: ${reason}`) } : null,
        serverError: (err) => this.logger.error(`${this.describe()}: ${err.message}`),
        network: this.network,
      },
      (conn) => new SyslogConnection(this, conn, this.emitter, this.logger),
    );
  }

  /** @internal The parser for messages arriving on a local port. */
  parserFor(localPort: number): SyslogEventParser {
    const o = this.options;
    const charset = o.portCharsets?.[String(localPort)] ?? o.parse.charset;
    let parser = this.parsers.get(charset);
    if (!parser) this.parsers.set(charset, (parser = new SyslogEventParser({ ...o.parse, charset, now: () => this.clock.now() })));
    return parser;
  }

  /** @internal */
  track(p: Promise<void>): void {
    this.inFlight.add(p);
    void p.finally(() => this.inFlight.delete(p));
  }
}

/**
 * One client: its frame decoder and the reads waiting for the channel. An idle connection holds
 * only this object (the decoder comes with the first read), so thousands of quiet senders cost
 * little.
 */
class SyslogConnection extends PausingReadLoop {
  private decoder: SyslogFrameDecoder | null = null;
  private warnedInvalid = 0;
  private overlongWarned = 0;
  private hostname: Promise<string> | null = null;
  private resolvedHost = "";

  constructor(
    private readonly source: SyslogTcpSource,
    conn: TcpConnection,
    private readonly emitter: SourceEmitter,
    private readonly logger: Logger,
  ) {
    super(conn);
    if (source.options.clientHostnameHeader) this.hostname = reverseName(conn.remoteIp, conn.remotePort);
    source.counter.values.OpenConnectionCount++;
  }

  protected override get halted(): boolean {
    return this.source.stopping;
  }

  protected override started(run: Promise<void>): void {
    this.source.track(run);
  }

  error(err: Error): void {
    this.logger.warn(`${this.source.describe()}: connection from ${this.conn.peer}: ${err.message}`);
  }

  close(hadError: boolean): void {
    this.source.counter.values.OpenConnectionCount--;
    if (hadError && this.decoder?.midMessage) this.logger.warn(`${this.source.describe()}: ${this.conn.peer} dropped the connection in the middle of a message; the partial message was discarded`);
  }

  protected failed(err: unknown): void {
    this.emitter.failed(err, `closing the connection from ${this.conn.peer}`);
  }

  /** Everything read so far goes out in one batch. */
  protected async consume(reads: Uint8Array[]): Promise<void> {
    // No copy: events copy their bodies out and the decoder its unfinished message, so
    // nothing keeps the read buffer once its frames are parsed.
    const decoder = (this.decoder ??= new SyslogFrameDecoder(this.source.options.eventSize));
    const frames = new FrameList();
    for (const read of reads) decoder.push(read, frames);
    await this.handle(frames);
    frames.clear();
    for (const read of reads) this.conn.release(read);
  }

  protected async finish(): Promise<void> {
    if (!this.decoder) return;
    const frames = new FrameList();
    const { truncated } = this.decoder.flush(frames);
    if (truncated) this.logger.warn(`${this.source.describe()}: ${this.conn.peer} disconnected inside an octet-counted message; delivered what arrived as Incomplete`);
    await this.handle(frames);
  }

  private async handle(frames: FrameList): Promise<void> {
    if (frames.length === 0) return;
    if (this.hostname) {
      this.resolvedHost = await this.hostname;
      this.hostname = null;
    }
    const o = this.source.options;
    // A batch is parsed when its turn comes: a 512 KiB read holds thousands of messages, and
    // only one batch of them is made into events at a time.
    for (let i = 0; i < frames.length; i += o.batchSize) {
      const batch = this.toEvents(frames, i, Math.min(i + o.batchSize, frames.length));
      if (!(await this.emitter.deliver(batch, { from: this.conn.peer }))) {
        this.logger.error(`${this.source.describe()}: stopping; dropped ${frames.length - i} events from ${this.conn.peer} that the channel did not take`);
        return;
      }
    }
  }

  /** The events of frames [from, to). */
  private toEvents(frames: FrameList, from: number, to: number): Event[] {
    const { source, conn } = this;
    const o = source.options;
    const parser = source.parserFor(conn.localPort);
    const localPort = String(conn.localPort);
    const events: Event[] = new Array(to - from);
    for (let i = from; i < to; i++) {
      const part = frames.parts[i];
      const event = parser.parseRange(frames.bytes[i], frames.starts[i], frames.ends[i], part);
      const invalid = parser.invalid;
      if (invalid !== undefined && part !== "rest") {
        source.counter.values.EventReadFail++;
        // A few lines per connection: a client sending garbage must not flood the log.
        if (this.warnedInvalid++ < 3) this.logger.warn(`${source.describe()}: message from ${conn.peer} is Invalid (${invalid}); delivered with ${EVENT_STATUS}=Invalid`);
      }
      if (o.portHeader || o.clientIPHeader || o.clientHostnameHeader) {
        const h = event.headers;
        if (o.portHeader) h[o.portHeader] = localPort;
        if (o.clientIPHeader) h[o.clientIPHeader] = conn.remoteIp;
        if (o.clientHostnameHeader) h[o.clientHostnameHeader] = this.resolvedHost;
      }
      events[i - from] = event;
    }
    const decoder = this.decoder as SyslogFrameDecoder;
    if (decoder.overlong > this.overlongWarned) {
      this.overlongWarned = decoder.overlong;
      this.logger.warn(`${source.describe()}: message from ${conn.peer} is longer than eventSize ${o.eventSize} bytes; delivered as an Incomplete event followed by Invalid pieces (raise eventSize)`);
    }
    return events;
  }
}
