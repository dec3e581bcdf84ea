import net from "node:net";
import { createTlsServer, type ServerTls } from "../../../net/tls.ts";
import type { Event } from "../../../core/event.ts";
import type { EventDrivenSource } from "../../../core/source.ts";
import { peerName, plainIp, reverseName } from "../../../net/peer.ts";
import type { ComponentContext } from "../../component.ts";
import { BaseSource } from "../base.ts";
import { type Frame, SyslogFrameDecoder } from "./framing.ts";
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
  private stopping = false;
  private servers: net.Server[] = [];
  private readonly sockets = new Set<net.Socket>();
  /** Batches on their way to the channel; stop() waits for them so none is cut off mid-commit. */
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    ctx: ComponentContext,
    readonly options: SyslogTcpOptions,
  ) {
    super(ctx, { label: `${options.type} source ${ctx.name}` });
  }

  private describe(): string {
    return `${this.options.type} source ${this.name}`;
  }

  /** The ports actually bound, in configuration order (useful with port 0). */
  get ports(): number[] {
    return this.servers.map((s) => {
      const a = s.address();
      return a && typeof a === "object" ? a.port : 0;
    });
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
    for (const s of this.sockets) s.destroy();
    await Promise.allSettled([...this.inFlight]);
    await this.closeServers();
    this.counter.stop();
    this.state = "STOP";
  }

  private async closeServers(): Promise<void> {
    const servers = this.servers;
    this.servers = [];
    await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  }

  private listen(port: number): Promise<net.Server> {
    const secured = this.options.tls;
    const onSocket = (socket: net.Socket) => this.serve(socket);
    const server = secured
      ? createTlsServer(secured, onSocket, (peer, reason) => this.logger.warn(`${this.describe()}: TLS handshake with ${peer} failed: ${reason}`))
      : net.createServer(onSocket);
    return new Promise((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, this.options.host || undefined, () => {
        server.off("error", reject);
        server.on("error", (err) => this.logger.error(`${this.describe()}: ${err.message}`));
        resolve(server);
      });
    });
  }

  private serve(socket: net.Socket): void {
    const ip = plainIp(socket.remoteAddress);
    const peer = peerName(socket);
    const localPort = String(socket.localPort);
    const o = this.options;
    const decoder = new SyslogFrameDecoder(o.eventSize);
    const charset = o.portCharsets?.[localPort] ?? o.parse.charset;
    const parser = new SyslogEventParser({ ...o.parse, charset, now: () => this.clock.now() });
    let hostname: Promise<string> | null = o.clientHostnameHeader ? reverseName(ip, socket.remotePort ?? 0) : null;
    let resolvedHost = "";
    this.sockets.add(socket);
    this.counter.values.OpenConnectionCount++;
    const queue: Uint8Array[] = [];
    let busy = false;
    let ended = false;
    let warnedInvalid = 0;
    let overlongWarned = 0;

    const toEvents = (frames: Frame[]): Event[] => {
      const events: Event[] = new Array(frames.length);
      for (let i = 0; i < frames.length; i++) {
        const { event, invalid } = parser.parse(frames[i].bytes, frames[i].part);
        if (invalid !== undefined && frames[i].part !== "rest") {
          this.counter.values.EventReadFail++;
          // A few lines per connection: a client sending garbage must not flood the log.
          if (warnedInvalid++ < 3) this.logger.warn(`${this.describe()}: message from ${peer} is Invalid (${invalid}); delivered with ${EVENT_STATUS}=Invalid`);
        }
        const h = event.headers;
        if (o.portHeader) h[o.portHeader] = localPort;
        if (o.clientIPHeader) h[o.clientIPHeader] = ip;
        if (o.clientHostnameHeader) h[o.clientHostnameHeader] = resolvedHost;
        events[i] = event;
      }
      if (decoder.overlong > overlongWarned) {
        overlongWarned = decoder.overlong;
        this.logger.warn(`${this.describe()}: message from ${peer} is longer than eventSize ${o.eventSize} bytes; delivered as an Incomplete event followed by Invalid pieces (raise eventSize)`);
      }
      return events;
    };

    const handle = async (frames: Frame[]) => {
      if (frames.length === 0) return;
      if (hostname) {
        resolvedHost = await hostname;
        hostname = null;
      }
      const events = toEvents(frames);
      for (let i = 0; i < events.length; i += o.batchSize) {
        const batch = o.batchSize >= events.length && i === 0 ? events : events.slice(i, i + o.batchSize);
        if (!(await this.emitter.deliver(batch, { from: peer }))) {
          this.logger.error(`${this.describe()}: stopping; dropped ${events.length - i} events from ${peer} that the channel did not take`);
          return;
        }
      }
    };

    const track = (p: Promise<void>) => {
      this.inFlight.add(p);
      void p.finally(() => this.inFlight.delete(p));
    };

    const pump = async () => {
      busy = true;
      socket.pause();
      try {
        while (queue.length > 0) {
          const frames: Frame[] = [];
          // Everything read so far goes out in one batch.
          while (queue.length > 0) decoder.push(queue.shift() as Uint8Array, frames);
          await handle(frames);
        }
        if (ended) await finish();
      } catch (err) {
        this.emitter.failed(err, `closing the connection from ${peer}`);
        socket.destroy();
      } finally {
        busy = false;
        if (!socket.destroyed && !this.stopping) socket.resume();
      }
    };

    const finish = async () => {
      ended = false;
      const frames: Frame[] = [];
      const { truncated } = decoder.flush(frames);
      if (truncated) this.logger.warn(`${this.describe()}: ${peer} disconnected inside an octet-counted message; delivered what arrived as Incomplete`);
      await handle(frames);
    };

    socket.on("data", (chunk: Buffer) => {
      // No copy: events copy their bodies out and the decoder its unfinished message, so
      // nothing keeps the read buffer once its frames are parsed.
      queue.push(chunk);
      if (!busy) track(pump());
    });
    socket.on("end", () => {
      ended = true;
      if (!busy) track(pump());
    });
    socket.on("error", (err) => this.logger.warn(`${this.describe()}: connection from ${peer}: ${err.message}`));
    socket.on("close", (hadError) => {
      this.sockets.delete(socket);
      this.counter.values.OpenConnectionCount--;
      if (hadError && decoder.midMessage) this.logger.warn(`${this.describe()}: ${peer} dropped the connection in the middle of a message; the partial message was discarded`);
    });
  }
}
