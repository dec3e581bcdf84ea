import type { Event } from "../../core/event.ts";
import { defineComponent, type ComponentContext } from "../component.ts";
import { builtIn } from "../registry.ts";
import { DatagramSource, DEFAULT_UDP_BACKLOG } from "./datagram.ts";
import { reverseName } from "../../net/peer.ts";
import { CLIENT_HOSTNAME_HEADER, CLIENT_IP_HEADER, customFormat, customFormatErrors, FORMAT_PROPS, KEEP_FIELDS } from "./syslog/options.ts";
import { parseKeepFields, SyslogEventParser } from "./syslog/parse.ts";
import type { OptionsOf, Props } from "../../config/schema.ts";

const props = {
  host: { type: "string", doc: "Host name or IP address to bind to (default: all IPv4 addresses)." },
  port: { type: "int", required: true, min: 0, max: 65535, doc: "Port to listen on." },
  keepFields: { ...KEEP_FIELDS.keepFields, default: "false" },
  ...CLIENT_IP_HEADER,
  ...CLIENT_HOSTNAME_HEADER,
  maxBacklog: { type: "int", default: DEFAULT_UDP_BACKLOG, min: 1, doc: "Events held while the channel is busy; datagrams beyond are dropped and counted as ChannelWriteFail." },
  ...FORMAT_PROPS,
} as const satisfies Props;

/** What the schema parses the properties into. */
export type SyslogUdpOptions = OptionsOf<typeof props>;

const NL = 10;
const CR = 13;

/**
 * Flume's syslogudp: each datagram is a syslog message (up to 64 KiB, RFC 5426). Lines after
 * the first become further events instead of being dropped as in Flume.
 */
export class SyslogUdpSource extends DatagramSource {
  private readonly parser: SyslogEventParser;
  private readonly names = new Map<string, string>();
  private invalidLogged = 0;

  constructor(
    ctx: ComponentContext,
    readonly options: SyslogUdpOptions,
  ) {
    super(ctx, options, `syslogudp source ${ctx.name}`);
    this.parser = new SyslogEventParser({ dialect: "syslog", keepFields: parseKeepFields(options.keepFields), rfc3164Zone: "local", now: () => this.clock.now(), custom: customFormat(options) });
  }

  protected toEvents(data: Uint8Array, ip: string, port: number, out: Event[]): void {
    let start = 0;
    while (start < data.length) {
      let nl = data.indexOf(NL, start);
      if (nl < 0) nl = data.length;
      let stop = nl;
      if (stop > start && data[stop - 1] === CR) stop--;
      if (stop > start) {
        const { event, invalid } = this.parser.parse(data.subarray(start, stop));
        if (invalid !== undefined) {
          this.counter.values.EventReadFail++;
          // Bounded: a flood of garbage must not flood the log.
          if (this.invalidLogged++ < 100) this.logger.warn(`${this.describe()}: datagram from ${ip}:${port} is Invalid (${invalid}); delivered with flume.syslog.status=Invalid`);
        }
        if (this.options.clientIPHeader) event.headers[this.options.clientIPHeader] = ip;
        // Resolved in prepare(), before delivery.
        if (this.options.clientHostnameHeader) event.headers[this.options.clientHostnameHeader] = ip;
        out.push(event);
      }
      start = nl + 1;
    }
  }

  protected override async prepare(batch: Event[]): Promise<void> {
    const header = this.options.clientHostnameHeader;
    if (!header) return;
    for (const e of batch) {
      const ip = e.headers[header];
      let name = this.names.get(ip);
      if (name === undefined) {
        name = await reverseName(ip, 0);
        if (this.names.size > 10000) this.names.clear();
        this.names.set(ip, name);
      }
      e.headers[header] = name;
    }
  }
}

export const definition = defineComponent({
  ...builtIn.syslogudpSource,
  doc: "Receives syslog (RFC 3164 and RFC 5424) datagrams; each message becomes an event with Facility, Severity, timestamp and host headers.",
  props,
  create: (config, ctx) => new SyslogUdpSource(ctx, config),
  validate: (config) => customFormatErrors(config),
});
