import { AvroRpcClient } from "../../rpc/client.ts";
import { RpcHandshakeTimeoutError } from "../../rpc/errors.ts";
import { CLIENT_TLS_PROPS, clientTls, tlsProblems } from "../../net/tls.ts";
import type { CompressionType } from "../../rpc/transport.ts";
import { defineComponent, type ComponentContext, plainLink, tlsFeature, deflateFeature } from "../component.ts";
import { builtIn } from "../registry.ts";
import { DEFAULT_RPC_TIMEOUT, type RpcEndpoint, RpcSink, type RpcSinkSettings, rpcSinkSettings, rpcSinkTargetProps, rpcTimeout } from "./rpc-sink.ts";

export interface AvroSinkOptions extends RpcSinkSettings {
  compression: CompressionType;
  compressionLevel: number;
}


/** Flume's avro sink: an RPC sink (see rpc-sink.ts) over Avro RPC's NettyAvroRpcClient protocol. */
export class AvroSink extends RpcSink<AvroRpcClient> {
  constructor(
    ctx: ComponentContext,
    readonly options: AvroSinkOptions,
  ) {
    super(ctx, options);
  }

  protected connect(endpoint: RpcEndpoint): Promise<AvroRpcClient> {
    return AvroRpcClient.connect({ ...endpoint, compression: this.options.compression, compressionLevel: this.options.compressionLevel });
  }

  protected describeClient(): string {
    return `avro${this.options.compression === "deflate" ? ", deflate" : ""}${this.options.tls ? ", TLS" : ""}`;
  }

  /** An Avro handshake that never came back: the connection was never set up. */
  protected override neverConnected(err: unknown): boolean {
    return err instanceof RpcHandshakeTimeoutError;
  }
}


export const definition = defineComponent({
  ...builtIn.avroSink,
  doc: "Sends events to an Avro source (another agent's, Flume TS or Apache Flume) over Avro RPC.",
  props: {
    ...rpcSinkTargetProps("Avro"),
    "connect-timeout": { type: "int", default: DEFAULT_RPC_TIMEOUT, doc: "Milliseconds to connect (TCP and TLS), and again for the Avro handshake on the first call (values under 1000 mean the default, as in Flume)" },
    "request-timeout": { type: "int", default: DEFAULT_RPC_TIMEOUT, doc: "Milliseconds to wait for each later batch's answer (values under 1000 mean the default)" },
    "reset-connection-interval": { type: "int", default: 0, min: 0, doc: "Seconds after which the connection is re-established (0: never), so load balancers rebalance" },
    "compression-type": { type: "enum", values: ["none", "deflate"], default: "none", doc: "deflate to compress; the avro source must use the same" },
    "compression-level": { type: "int", default: 6, min: 0, max: 9, doc: "zlib level for deflate" },
    ...CLIENT_TLS_PROPS,
    maxIoWorkers: { type: "int", doc: "Accepted and ignored, as in Flume 1.11" },
  },
  validate: (config) => tlsProblems(() => clientTls(config)),
  rpcLink: {
    protocol: "avro",
    address: (o) => ({ host: o.hostname, port: o.port }),
    plain: (o) => plainLink(o, [tlsFeature(o), deflateFeature(o)]),
  },
  create(config, ctx) {
    return new AvroSink(ctx, {
      ...rpcSinkSettings(config),
      connectTimeout: rpcTimeout(config["connect-timeout"]),
      compression: config["compression-type"] === "deflate" ? "deflate" : "none",
      compressionLevel: config["compression-level"],
    });
  },
});
