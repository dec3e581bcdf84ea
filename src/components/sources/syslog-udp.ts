import dgram from "node:dgram";
import { isIPv6 } from "node:net";
import type { Event } from "../../core/event.ts";
import type { EventDrivenSource } from "../../core/source.ts";
import type { ComponentContext, ComponentDefinition } from "../component.ts";
import { NetworkSource, plainIp, reverseName } from "./syslog/delivery.ts";
import { CLIENT_HOSTNAME_HEADER, CLIENT_IP_HEADER, KEEP_FIELDS } from "./syslog/options.ts";
import { type KeepFields, parseKeepFields, SyslogEventParser } from "./syslog/parse.ts";

/** RFC 5426 allows 64 KiB datagrams; Flume's syslogudp reads up to that. */
export const MAX_DATAGRAM = 1 << 16;
/** Events held while the channel is busy; beyond this, datagrams are dropped (UDP cannot push back). */
export const DEFAULT_UDP_BACKLOG = 10000;

export interface SyslogUdpOptions {
  host: string;
  port: number;
  keepFields: KeepFields;
  clientIPHeader?: string;
  clientHostnameHeader?: string;
  maxBacklog: number;
}

const NL = 10;

/**
 * Flume's syslogudp: each datagram is a syslog message (lines after the first are further
 * messages rather than being dropped). Datagrams that arrive while a batch waits on the channel
 * are queued, up to maxBacklog events, and go out as the next batch.
 */
export class SyslogUdpSource extends NetworkSource implements EventDrivenSource {
  readonly kind = "event-driven";
  private socket: dgram.Socket | null = null;
  private readonly parser: SyslogEventParser;
  private backlog: Event[] = [];
  private flushing = false;
  private scheduled = false;
  private dropped = 0;
  private readonly names = new Map<string, string>();

  constructor(
    ctx: ComponentContext,
    readonly options: SyslogUdpOptions,
  ) {
    super(ctx);
    this.parser = new SyslogEventParser({ dialect: "syslog", keepFields: options.keepFields, rfc3164Zone: "local", now: () => this.clock.now() });
  }

  protected describe(): string {
    return `syslogudp source ${this.name}`;
  }

  get port(): number {
    return this.socket?.address().port ?? this.options.port;
  }

  async start(): Promise<void> {
    this.stopping = false;
    this.counter.start();
    const host = this.options.host || undefined;
    const socket = dgram.createSocket({ type: host && isIPv6(host) ? "udp6" : "udp4", reuseAddr: true });
    await new Promise<void>((resolve, reject) => {
      socket.once("error", reject);
      socket.bind(this.options.port, host, () => {
        socket.off("error", reject);
        resolve();
      });
    });
    socket.on("error", (err) => this.logger.error(`${this.describe()}: ${err.message}`));
    socket.on("message", (msg, rinfo) => this.receive(msg, rinfo));
    this.socket = socket;
    this.state = "START";
    this.logger.info(`${this.describe()} listening on ${host ?? "*"}:${this.port}`);
  }

  async stop(): Promise<void> {
    this.stopping = true;
    const socket = this.socket;
    this.socket = null;
    if (socket) await new Promise<void>((resolve) => socket.close(() => resolve()));
    if (this.backlog.length > 0) await this.flush();
    this.counter.stop();
    this.state = "STOP";
  }

  private receive(msg: Buffer, rinfo: dgram.RemoteInfo): void {
    const ip = plainIp(rinfo.address);
    const peer = `${ip}:${rinfo.port}`;
    const data: Uint8Array = msg.buffer.byteLength > msg.byteLength * 2 ? new Uint8Array(msg) : msg;
    let start = 0;
    while (start < data.length) {
      let nl = data.indexOf(NL, start);
      if (nl < 0) nl = data.length;
      let stop = nl;
      if (stop > start && data[stop - 1] === 13) stop--;
      if (stop > start) this.add(this.parser.parse(data.subarray(start, stop)), ip, peer);
      start = nl + 1;
    }
    if (!this.scheduled && !this.flushing) {
      this.scheduled = true;
      // Let the datagrams already waiting in the socket join this batch.
      setImmediate(() => {
        this.scheduled = false;
        void this.flush();
      });
    }
  }

  private add(parsed: ReturnType<SyslogEventParser["parse"]>, ip: string, peer: string): void {
    if (parsed.invalid !== undefined) {
      this.counter.values.EventReadFail++;
      this.logger.warn(`${this.describe()}: datagram from ${peer} is Invalid (${parsed.invalid}); delivered with flume.syslog.status=Invalid`);
    }
    if (this.backlog.length >= this.options.maxBacklog) {
      if (this.dropped++ === 0) this.logger.error(`${this.describe()}: channel is not keeping up; dropping datagrams (from ${peer} and others) beyond ${this.options.maxBacklog} queued events`);
      this.counter.values.ChannelWriteFail++;
      return;
    }
    const h = parsed.event.headers;
    if (this.options.clientIPHeader) h[this.options.clientIPHeader] = ip;
    if (this.options.clientHostnameHeader) h[this.options.clientHostnameHeader] = ip; // resolved before delivery
    this.backlog.push(parsed.event);
  }

  private async flush(): Promise<void> {
    if (this.flushing) return;
    this.flushing = true;
    try {
      while (this.backlog.length > 0) {
        const batch = this.backlog;
        this.backlog = [];
        if (this.options.clientHostnameHeader) await this.resolveNames(batch);
        await this.deliver(batch, "UDP clients", !this.stopping);
        if (this.dropped > 0) {
          this.logger.warn(`${this.describe()}: ${this.dropped} datagrams were dropped while the channel was full`);
          this.dropped = 0;
        }
      }
    } finally {
      this.flushing = false;
    }
  }

  /** Reverse lookups, cached per address, for the clientHostnameHeader. */
  private async resolveNames(batch: Event[]): Promise<void> {
    const header = this.options.clientHostnameHeader as string;
    for (const e of batch) {
      const ip = e.headers[header];
      let name = this.names.get(ip);
      if (name !== undefined) {
        e.headers[header] = name;
        continue;
      }
      name = await reverseName(ip, 0);
      if (this.names.size > 10000) this.names.clear();
      this.names.set(ip, name);
      e.headers[header] = name;
    }
  }
}

export const definition: ComponentDefinition<SyslogUdpSource> = {
  schema: {
    kind: "source",
    type: "syslogudp",
    aliases: ["org.apache.flume.source.SyslogUDPSource"],
    doc: "Receives syslog (RFC 3164 and RFC 5424) datagrams; each message becomes an event with Facility, Severity, timestamp and host headers.",
    props: [
      { key: "host", type: "string", doc: "Host name or IP address to bind to (default: all IPv4 addresses)." },
      { key: "port", type: "int", required: true, min: 0, max: 65535, doc: "Port to listen on." },
      { ...KEEP_FIELDS, default: "false" },
      CLIENT_IP_HEADER,
      CLIENT_HOSTNAME_HEADER,
      { key: "maxBacklog", type: "int", default: DEFAULT_UDP_BACKLOG, min: 1, doc: "Events held while the channel is busy; datagrams beyond are dropped and counted as ChannelWriteFail." },
    ],
  },
  create(config, ctx) {
    return new SyslogUdpSource(ctx, {
      host: config.string("host"),
      port: config.int("port"),
      keepFields: parseKeepFields(config.string("keepFields")),
      clientIPHeader: config.optionalString("clientIPHeader"),
      clientHostnameHeader: config.optionalString("clientHostnameHeader"),
      maxBacklog: config.int("maxBacklog"),
    });
  },
};
