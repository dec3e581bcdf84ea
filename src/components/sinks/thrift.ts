import type { PropError } from "../../config/schema.ts";
import { CLIENT_TLS_PROPS, clientTls, tlsProblems } from "../../net/tls.ts";
import { ThriftRpcClient } from "../../rpc/thrift/client.ts";
import { KERBEROS_UNSUPPORTED, PROTOCOL_DOC, resolveProtocol } from "../../rpc/thrift/options.ts";
import type { ThriftProtocolName } from "../../rpc/thrift/types.ts";
import { type ComponentContext, defineComponent, plainLink, tlsFeature } from "../component.ts";
import { builtIn } from "../registry.ts";
import { DEFAULT_RPC_TIMEOUT, type RpcEndpoint, RpcSink, type RpcSinkSettings, rpcSinkSettings, rpcSinkTargetProps } from "./rpc-sink.ts";

export interface ThriftSinkOptions extends RpcSinkSettings {
  protocol: ThriftProtocolName;
}


/**
 * Flume's thrift sink: an RPC sink (see rpc-sink.ts) over ThriftRpcClient's framed protocol. Any
 * Status but OK, a TApplicationException, a timeout or a broken connection fails the batch.
 */
export class ThriftSink extends RpcSink<ThriftRpcClient> {
  constructor(
    ctx: ComponentContext,
    readonly options: ThriftSinkOptions,
  ) {
    super(ctx, options);
  }

  protected connect(endpoint: RpcEndpoint): Promise<ThriftRpcClient> {
    return ThriftRpcClient.connect({ ...endpoint, protocol: this.options.protocol });
  }

  protected describeClient(): string {
    return `thrift, ${this.options.protocol} protocol${this.options.tls ? ", TLS" : ""}`;
  }
}

export const definition = defineComponent({
  ...builtIn.thriftSink,
  doc: "Sends events to a thrift source (another agent's, Flume TS or Apache Flume, or any ThriftSourceProtocol server) over framed Thrift RPC, binary or compact protocol.",
  props: {
    ...rpcSinkTargetProps("thrift"),
    protocol: { type: "string", default: "compact", doc: `${PROTOCOL_DOC}; another value means compact, with a warning` },
    "connect-timeout": { type: "int", default: DEFAULT_RPC_TIMEOUT, min: 1, doc: "Milliseconds to connect (TCP and TLS). Flume 1.11's thrift client has no connect timeout; Flume TS applies this one" },
    "request-timeout": { type: "int", default: DEFAULT_RPC_TIMEOUT, doc: "Milliseconds to wait for each batch's answer (values under 1000 mean the default, as in Flume)" },
    "reset-connection-interval": {
      aliases: ["connection-reset-interval"],
      type: "int",
      default: 0,
      min: 0,
      doc: "Seconds after which the connection is re-established (0: never), so load balancers rebalance. The User Guide calls it connection-reset-interval; Flume's code reads reset-connection-interval; both are accepted",
    },
    ...CLIENT_TLS_PROPS,
    kerberos: { type: "boolean", default: false, doc: "Kerberos authentication; not supported by Flume TS (true is a configuration error)" },
    "client-principal": { type: "string", doc: "Kerberos principal of the sink; only used with kerberos, which Flume TS does not support" },
    "client-keytab": { type: "path", doc: "Kerberos keytab of the sink; only used with kerberos, which Flume TS does not support" },
    "server-principal": { type: "string", doc: "Kerberos principal of the thrift source; only used with kerberos, which Flume TS does not support" },
    maxConnections: { type: "int", doc: "Connection pool size of Flume's client; its thrift sink always uses 1. Accepted and ignored" },
  },
  validate(config) {
    const errors: PropError[] = [];
    if (config.kerberos) errors.push({ key: "kerberos", message: KERBEROS_UNSUPPORTED });
    errors.push(...tlsProblems(() => clientTls(config)));
    return errors;
  },
  rpcLink: {
    protocol: "thrift",
    address: (o) => ({ host: o.hostname, port: o.port }),
    plain: (o) => plainLink(o, [tlsFeature(o)]),
  },
  create(config, ctx) {
    return new ThriftSink(ctx, { ...rpcSinkSettings(config), protocol: resolveProtocol(config.protocol, (m) => ctx.logger.warn(`Rpc sink ${ctx.name}: ${m}`)) });
  },
});
