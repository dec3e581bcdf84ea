import type { Event } from "../../core/event.ts";
import { defineComponent, type ComponentContext } from "../component.ts";
import { builtIn } from "../registry.ts";
import { DatagramSource, DEFAULT_UDP_BACKLOG } from "./datagram.ts";
import type { OptionsOf, Props } from "../../config/schema.ts";

const props = {
  bind: { type: "string", required: true, doc: "Host name or IP address to bind to." },
  port: { type: "int", required: true, min: 0, max: 65535, doc: "Port to listen on." },
  remoteAddressHeader: { type: "string", doc: "Header to store the sender's address in (/ip:port)." },
  maxBacklog: { type: "int", default: DEFAULT_UDP_BACKLOG, min: 1, doc: "Events held while the channel is busy; datagrams beyond are dropped and counted as ChannelWriteFail." },
} as const satisfies Props;

/** What the schema parses the properties into. */
export type NetcatUdpOptions = OptionsOf<typeof props>;

const NL = 10;

/**
 * Flume's netcatudp (`nc -u -k -l`): each line of a datagram becomes an event. The sender's
 * address goes into remoteAddressHeader, written as Java prints it ("/127.0.0.1:5555").
 * Lines after the first in a datagram become further events rather than being dropped.
 */
export class NetcatUdpSource extends DatagramSource {
  constructor(
    ctx: ComponentContext,
    readonly options: NetcatUdpOptions,
  ) {
    super(ctx, { host: options.bind, port: options.port, maxBacklog: options.maxBacklog }, `netcatudp source ${ctx.name}`);
  }

  protected toEvents(data: Uint8Array, ip: string, port: number, out: Event[]): void {
    const header = this.options.remoteAddressHeader;
    const address = header ? `/${ip}:${port}` : "";
    let start = 0;
    do {
      let nl = data.indexOf(NL, start);
      if (nl < 0) nl = data.length;
      const headers: Record<string, string> = header ? { [header]: address } : {};
      out.push({ headers, body: data.subarray(start, nl) });
      start = nl + 1;
    } while (start < data.length);
  }
}

export const definition = defineComponent({
  ...builtIn.netcatudpSource,
  doc: "Listens on a UDP port; each line of each datagram becomes an event.",
  props,
  create: (config, ctx) => new NetcatUdpSource(ctx, config),
});
