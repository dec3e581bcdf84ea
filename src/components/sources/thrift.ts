import { ChannelException } from "../../core/errors.ts";
import type { Event } from "../../core/event.ts";
import type { OptionsOf, PropError, Props } from "../../config/schema.ts";
import { SERVER_TLS_PROPS, serverTls, tlsProblems } from "../../net/tls.ts";
import { KERBEROS_UNSUPPORTED, PROTOCOL_DOC, protocolError, resolveProtocol } from "../../rpc/thrift/options.ts";
import { ThriftServer, type ThriftRequestHandler } from "../../rpc/thrift/server.ts";
import { DEFAULT_MAX_FRAME_SIZE, type ThriftProtocolName, type ThriftStatus } from "../../rpc/thrift/types.ts";
import { type ComponentContext, defineComponent, plainLink, tlsFeature } from "../component.ts";
import { builtIn } from "../registry.ts";
import { RpcSource, type RpcServerHooks } from "./rpc-source.ts";

/** What the schema parses the properties into. */
export type ThriftSourceOptions = OptionsOf<typeof props>;

/**
 * Flume's thrift source: a ThriftSourceProtocol server (src/rpc/thrift). Each appendBatch goes
 * to the channel processor as one batch and is answered OK once the channels committed it,
 * FAILED when a channel refused it (the client keeps the events and retries).
 */
export class ThriftSource extends RpcSource<ThriftServer> implements ThriftRequestHandler {
  /** The protocol spoken, as Flume picks it from the protocol property. */
  readonly protocol: ThriftProtocolName;

  constructor(
    ctx: ComponentContext,
    readonly options: ThriftSourceOptions,
  ) {
    super(ctx, `Thrift source ${ctx.name}`, options);
    this.protocol = resolveProtocol(options.protocol, (m) => this.logger.warn(`Thrift source ${ctx.name}: ${m}`));
  }

  protected createServer(hooks: RpcServerHooks): ThriftServer {
    const o = this.options;
    return new ThriftServer(this, { bind: o.bind, port: o.port, protocol: this.protocol, maxFrameSize: o["max-frame-size"], tls: this.tls ?? undefined, logger: this.logger, ...hooks });
  }

  protected describeServer(): string {
    return ` (${this.protocol} protocol, framed${this.tls ? ", TLS" : ""})`;
  }

  // As Flume: a channel refusal is FAILED (the client retries); anything else becomes an INTERNAL_ERROR answer.
  async appendBatch(events: Event[], peer: string): Promise<ThriftStatus> {
    return statusOf(await this.emitter.offer(events, peer));
  }

  async append(event: Event, peer: string): Promise<ThriftStatus> {
    return statusOf(await this.emitter.offerOne(event, peer));
  }
}

function statusOf(refused: Error | null): ThriftStatus {
  if (refused && !(refused instanceof ChannelException)) throw refused;
  return refused ? "FAILED" : "OK";
}

const props = {
  bind: { type: "string", required: true, doc: "Host name or IP address to listen on" },
  port: { type: "int", required: true, min: 0, max: 65535, doc: "Port to listen on" },
  threads: { type: "int", min: 0, doc: "Maximum worker threads in Flume; accepted and ignored (one event loop serves every client)" },
  protocol: { type: "string", default: "compact", doc: PROTOCOL_DOC },
  ...SERVER_TLS_PROPS,
  kerberos: { type: "boolean", default: false, doc: "Kerberos authentication; not supported by Flume TS (true is a configuration error)" },
  "agent-principal": { type: "string", doc: "Kerberos principal of the source; only used with kerberos, which Flume TS does not support" },
  "agent-keytab": { type: "path", doc: "Kerberos keytab of the source; only used with kerberos, which Flume TS does not support" },
  "max-frame-size": { type: "int", default: DEFAULT_MAX_FRAME_SIZE, min: 1024, doc: "Largest request accepted, in bytes; a larger frame closes that connection. Default: libthrift's limit in Flume 1.11 (Flume TS only)" },
} as const satisfies Props;


export const definition = defineComponent({
  ...builtIn.thriftSource,
  doc: "Receives events from Thrift clients of Flume's ThriftSourceProtocol: other agents' thrift sinks, Flume's ThriftRpcClient, code generated from flume.thrift. Framed transport; binary or compact protocol.",
  props,
  validate(config) {
    const errors: PropError[] = [];
    const protocol = protocolError(config.protocol);
    if (protocol) errors.push({ key: "protocol", message: protocol });
    if (config.kerberos) errors.push({ key: "kerberos", message: KERBEROS_UNSUPPORTED });
    errors.push(...tlsProblems(() => serverTls(config)));
    return errors;
  },
  rpcLink: {
    protocol: "thrift",
    address: (o) => ({ host: o.bind, port: o.port }),
    plain: (o) => plainLink(o, [tlsFeature(o)]),
  },
  create(config, ctx) {
    return new ThriftSource(ctx, config);
  },
});
