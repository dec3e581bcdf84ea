import { ChannelException } from "../../core/errors.ts";
import type { Event } from "../../core/event.ts";
import type { OptionsOf, Props } from "../../config/schema.ts";
import { SERVER_TLS_PROPS, serverTls, tlsProblems } from "../../net/tls.ts";
import { DEFAULT_FRAME_LIMITS } from "../../rpc/frame.ts";
import { IpFilter, parseIpFilterRules } from "../../rpc/ip-filter.ts";
import type { RpcStatus } from "../../rpc/protocol.ts";
import { AvroRpcServer, type RpcRequestHandler } from "../../rpc/server.ts";
import { defineComponent, type ComponentContext, plainLink, tlsFeature, deflateFeature } from "../component.ts";
import { builtIn } from "../registry.ts";
import { RpcSource, type RpcServerHooks } from "./rpc-source.ts";

/** What the schema parses the properties into. */
export type AvroSourceOptions = OptionsOf<typeof props>;

/**
 * Flume's avro source: an Avro RPC server for AvroSourceProtocol. Each appendBatch goes to the
 * channel processor as one batch and is answered OK only after the channels committed it,
 * FAILED when a required channel refused it (the sender keeps the events and retries).
 */
export class AvroSource extends RpcSource<AvroRpcServer> implements RpcRequestHandler {
  constructor(
    ctx: ComponentContext,
    readonly options: AvroSourceOptions,
  ) {
    super(ctx, `Avro source ${ctx.name}`, options);
  }

  protected createServer(hooks: RpcServerHooks): AvroRpcServer {
    const o = this.options;
    return new AvroRpcServer(this, {
      bind: o.bind,
      port: o.port,
      compression: o["compression-type"],
      tls: this.tls ?? undefined,
      ipFilter: o.ipFilter && o.ipFilterRules ? new IpFilter(parseIpFilterRules(o.ipFilterRules)) : undefined,
      limits: { maxFrameBytes: o["max-frame-size"], maxBuffers: o["max-frame-buffers"] },
      maxBufferedBytes: o["max-buffered-bytes"],
      logger: this.logger,
      ...hooks,
    });
  }

  protected describeServer(): string {
    return `${this.tls ? " (TLS)" : ""}${this.options["compression-type"] === "deflate" ? " (deflate)" : ""}`;
  }

  /** As Flume: any failure to store the batch is answered FAILED; the sender retries. */
  async appendBatch(events: Event[], peer: string): Promise<RpcStatus> {
    return (await this.emitter.offer(events, peer)) ? "FAILED" : "OK";
  }

  /** A refused event is answered FAILED; another failure goes back as an Avro error, as in Flume. */
  async append(event: Event, peer: string): Promise<RpcStatus> {
    const refused = await this.emitter.offerOne(event, peer);
    if (refused && !(refused instanceof ChannelException)) throw refused;
    return refused ? "FAILED" : "OK";
  }
}

export const FRAME_LIMIT_PROPS = {
  "max-frame-size": { type: "int", default: DEFAULT_FRAME_LIMITS.maxFrameBytes, min: 1024, doc: "Largest Avro RPC request accepted, in bytes; a larger one closes the connection (Flume TS only)" },
  "max-frame-buffers": { type: "int", default: DEFAULT_FRAME_LIMITS.maxBuffers, min: 1, doc: "Most buffers one Avro RPC frame may declare (Flume TS only)" },
} as const satisfies Props;

const props = {
  bind: { type: "string", required: true, doc: "Host name or IP address to listen on" },
  port: { type: "int", required: true, min: 0, max: 65535, doc: "Port to listen on" },
  threads: { type: "int", min: 0, doc: "Maximum worker threads in Flume; accepted and ignored (one event loop serves every client)" },
  "compression-type": { type: "enum", values: ["none", "deflate"], default: "none", doc: "deflate to accept zlib-compressed connections; must match the client's compression-type" },
  ...SERVER_TLS_PROPS,
  ipFilter: { type: "boolean", default: false, doc: "Filter connecting clients by ipFilterRules" },
  ipFilterRules: { type: "string", doc: "Comma-separated allow|deny:ip|name:pattern rules, first match wins, e.g. allow:ip:127.*,deny:name:localhost" },
  ...FRAME_LIMIT_PROPS,
  "max-buffered-bytes": { type: "int", min: 1024, doc: "Most request bytes buffered per connection (decoded and not yet answered); reading from the client pauses beyond it. Default: max-frame-size + 1 MiB (Flume TS only)" },
} as const satisfies Props;


export const definition = defineComponent({
  ...builtIn.avroSource,
  doc: "Receives events from Avro RPC clients: other agents' avro sinks, flume-ng avro-client, the Flume client SDK.",
  props,
  validate(config) {
    const errors: { key: string; message: string }[] = [];
    const buffered = config["max-buffered-bytes"];
    if (buffered !== undefined && buffered < config["max-frame-size"]) {
      errors.push({ key: "max-buffered-bytes", message: `must be at least max-frame-size (${config["max-frame-size"]}) so that one request fits, got ${config["max-buffered-bytes"]}` });
    }
    if (config.ipFilter) {
      try {
        parseIpFilterRules(config.ipFilterRules ?? "");
      } catch (err) {
        errors.push({ key: "ipFilterRules", message: (err as Error).message.replace(/^ipFilterRules: /, "") });
      }
    }
    errors.push(...tlsProblems(() => serverTls(config)));
    return errors;
  },
  rpcLink: {
    protocol: "avro",
    address: (o) => ({ host: o.bind, port: o.port }),
    plain: (o) =>
      plainLink(o, [
        tlsFeature(o),
        deflateFeature(o),
        { name: "ipFilter", on: o.ipFilter, off: { ipFilter: false } },
      ]),
  },
  create(config, ctx) {
    return new AvroSource(ctx, config);
  },
});
