import { ChannelException } from "../../core/errors.ts";
import type { Event } from "../../core/event.ts";
import type { EventDrivenSource } from "../../core/source.ts";
import type { ComponentConfig, PropSpec } from "../../config/schema.ts";
import { DEFAULT_FRAME_LIMITS, type FrameLimits } from "../../rpc/frame.ts";
import { IpFilter, parseIpFilterRules } from "../../rpc/ip-filter.ts";
import type { RpcStatus } from "../../rpc/protocol.ts";
import { AvroRpcServer, type RpcRequestHandler } from "../../rpc/server.ts";
import { serverTlsOptions, type TlsSettings } from "../../rpc/tls.ts";
import type { CompressionType } from "../../rpc/transport.ts";
import type { ComponentContext, ComponentDefinition } from "../component.ts";
import { BaseSource } from "./base.ts";

export interface AvroSourceOptions {
  bind: string;
  port: number;
  compression: CompressionType;
  ssl: boolean;
  tls: TlsSettings;
  ipFilterRules: string | null;
  limits: FrameLimits;
  /** Request bytes buffered per connection (absent: max-frame-size + 1 MiB). */
  maxBufferedBytes?: number;
}

/**
 * Flume's avro source: an Avro RPC server for AvroSourceProtocol. Each appendBatch goes to the
 * channel processor as one batch and is answered OK only after the channels committed it,
 * FAILED when a required channel refused it (the sender keeps the events and retries).
 */
export class AvroSource extends BaseSource implements EventDrivenSource, RpcRequestHandler {
  readonly kind = "event-driven";
  private server: AvroRpcServer | null = null;
  private boundPort = 0;

  constructor(
    ctx: ComponentContext,
    readonly options: AvroSourceOptions,
  ) {
    super(ctx);
  }

  /** The port actually bound (useful with port 0). */
  get port(): number {
    return this.boundPort || this.options.port;
  }

  get label(): string {
    return `Avro source ${this.name}`;
  }

  async start(): Promise<void> {
    const o = this.options;
    this.counter.start();
    const server = new AvroRpcServer(this, {
      bind: o.bind,
      port: o.port,
      compression: o.compression,
      tls: o.ssl ? serverTlsOptions(o.tls) : undefined,
      ipFilter: o.ipFilterRules ? new IpFilter(parseIpFilterRules(o.ipFilterRules)) : undefined,
      limits: o.limits,
      maxBufferedBytes: o.maxBufferedBytes,
      logger: this.logger,
      label: this.label,
      onConnectionCountChange: (n) => this.counter.set("OpenConnectionCount", n),
    });
    try {
      this.boundPort = await server.listen();
    } catch (err) {
      this.state = "ERROR";
      throw new Error(`${this.label}: cannot listen on ${o.bind}:${o.port}: ${(err as Error).message}`, { cause: err });
    }
    this.server = server;
    this.state = "START";
    this.logger.info(`${this.label} started on ${o.bind}:${this.port}${o.ssl ? " (TLS)" : ""}${o.compression === "deflate" ? " (deflate)" : ""}`);
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (server) await server.close();
    this.counter.set("OpenConnectionCount", 0);
    this.counter.stop();
    this.state = "STOP";
    this.logger.info(`${this.label} stopped. Metrics: ${JSON.stringify(this.counter.values)}`);
  }

  async appendBatch(events: Event[], peer: string): Promise<RpcStatus> {
    const c = this.counter.values;
    c.AppendBatchReceivedCount++;
    c.EventReceivedCount += events.length;
    try {
      await this.getChannelProcessor().processEventBatch(events);
    } catch (err) {
      // As Flume: any failure to store the batch is FAILED; the sender retries.
      c.ChannelWriteFail++;
      this.logger.error(`${this.label}: unable to process a batch of ${events.length} events from ${peer}: ${(err as Error).message}`);
      return "FAILED";
    }
    c.AppendBatchAcceptedCount++;
    c.EventAcceptedCount += events.length;
    return "OK";
  }

  async append(event: Event, peer: string): Promise<RpcStatus> {
    const c = this.counter.values;
    c.AppendReceivedCount++;
    c.EventReceivedCount++;
    try {
      await this.getChannelProcessor().processEvent(event);
    } catch (err) {
      if (!(err instanceof ChannelException)) throw err;
      c.ChannelWriteFail++;
      this.logger.warn(`${this.label}: unable to process an event from ${peer}: ${err.message}`);
      return "FAILED";
    }
    c.AppendAcceptedCount++;
    c.EventAcceptedCount++;
    return "OK";
  }
}

/** TLS protocol and cipher properties shared with the avro sink (Flume's names). */
export const TLS_FILTER_PROPS: readonly PropSpec[] = [
  { key: "exclude-protocols", type: "list", default: ["SSLv3"], doc: "TLS protocol versions to disable (SSLv3 TLSv1 TLSv1.1 TLSv1.2 TLSv1.3)" },
  { key: "include-protocols", type: "list", default: [], doc: "TLS protocol versions to allow (empty: every version not excluded, TLSv1.2 and newer)" },
  { key: "exclude-cipher-suites", type: "list", default: [], doc: "Cipher suites to disable (OpenSSL names)" },
  { key: "include-cipher-suites", type: "list", default: [], doc: "Cipher suites to allow (OpenSSL names; empty: OpenSSL's defaults)" },
];

export const FRAME_LIMIT_PROPS: readonly PropSpec[] = [
  { key: "max-frame-size", type: "int", default: DEFAULT_FRAME_LIMITS.maxFrameBytes, min: 1024, doc: "Largest Avro RPC request accepted, in bytes; a larger one closes the connection (Flume TS only)" },
  { key: "max-frame-buffers", type: "int", default: DEFAULT_FRAME_LIMITS.maxBuffers, min: 1, doc: "Most buffers one Avro RPC frame may declare (Flume TS only)" },
];

const JAVA_STORES = new Set(["JKS", "PKCS12", "JCEKS"]);

function tlsSettings(config: ComponentConfig): TlsSettings {
  return {
    keystore: config.optionalString("keystore"),
    keystoreKey: config.optionalString("keystore-key"),
    keystorePassword: config.optionalString("keystore-password"),
    keystoreType: config.string("keystore-type"),
    excludeProtocols: config.list("exclude-protocols"),
    includeProtocols: config.list("include-protocols"),
    excludeCipherSuites: config.list("exclude-cipher-suites"),
    includeCipherSuites: config.list("include-cipher-suites"),
  };
}

export const definition: ComponentDefinition<AvroSource> = {
  schema: {
    kind: "source",
    type: "avro",
    aliases: ["org.apache.flume.source.AvroSource"],
    doc: "Receives events from Avro RPC clients: other agents' avro sinks, flume-ng avro-client, the Flume client SDK.",
    props: [
      { key: "bind", type: "string", required: true, doc: "Host name or IP address to listen on" },
      { key: "port", type: "int", required: true, min: 0, max: 65535, doc: "Port to listen on" },
      { key: "threads", type: "int", min: 0, doc: "Maximum worker threads in Flume; accepted and ignored (one event loop serves every client)" },
      { key: "compression-type", type: "enum", values: ["none", "deflate"], default: "none", doc: "deflate to accept zlib-compressed connections; must match the client's compression-type" },
      { key: "ssl", type: "boolean", default: false, doc: "Accept only TLS connections" },
      { key: "keystore", type: "path", doc: "PEM file with the server certificate chain (it may also hold the private key)" },
      { key: "keystore-key", type: "path", doc: "PEM file with the server's private key, when it is not in keystore (Flume TS only)" },
      { key: "keystore-password", type: "string", secret: true, doc: "Passphrase of an encrypted private key" },
      { key: "keystore-type", type: "string", default: "PEM", doc: "PEM; Java key stores (JKS, PKCS12) must be converted to PEM files (the error says how)" },
      ...TLS_FILTER_PROPS,
      { key: "ipFilter", type: "boolean", default: false, doc: "Filter connecting clients by ipFilterRules" },
      { key: "ipFilterRules", type: "string", doc: "Comma-separated allow|deny:ip|name:pattern rules, first match wins, e.g. allow:ip:127.*,deny:name:localhost" },
      ...FRAME_LIMIT_PROPS,
      { key: "max-buffered-bytes", type: "int", min: 1024, doc: "Most request bytes buffered per connection (decoded and not yet answered); reading from the client pauses beyond it. Default: max-frame-size + 1 MiB (Flume TS only)" },
    ],
  },
  validate(config) {
    const errors: { key: string; message: string }[] = [];
    const buffered = config.values["max-buffered-bytes"];
    if (buffered !== undefined && config.int("max-buffered-bytes") < config.int("max-frame-size")) {
      errors.push({ key: "max-buffered-bytes", message: `must be at least max-frame-size (${config.int("max-frame-size")}) so that one request fits, got ${config.int("max-buffered-bytes")}` });
    }
    if (config.boolean("ipFilter")) {
      try {
        parseIpFilterRules(config.string("ipFilterRules"));
      } catch (err) {
        errors.push({ key: "ipFilterRules", message: (err as Error).message.replace(/^ipFilterRules: /, "") });
      }
    }
    if (config.boolean("ssl")) {
      if (!config.optionalString("keystore")) errors.push({ key: "keystore", message: "is required when ssl is true: a PEM certificate file" });
      const type = config.string("keystore-type").toUpperCase();
      if (JAVA_STORES.has(type)) {
        errors.push({
          key: "keystore-type",
          message: `${type} key stores are not read by Flume TS; convert to PEM (keytool -importkeystore -destkeystore ks.p12 -deststoretype PKCS12, then openssl pkcs12 -in ks.p12 -nokeys -out cert.pem and -nocerts -nodes -out key.pem) and set keystore = cert.pem, keystore-key = key.pem, keystore-type = PEM`,
        });
      }
    }
    return errors;
  },
  create(config, ctx) {
    return new AvroSource(ctx, {
      bind: config.string("bind"),
      port: config.int("port"),
      compression: config.string("compression-type") === "deflate" ? "deflate" : "none",
      ssl: config.boolean("ssl"),
      tls: tlsSettings(config),
      ipFilterRules: config.boolean("ipFilter") ? config.string("ipFilterRules") : null,
      limits: { maxFrameBytes: config.int("max-frame-size"), maxBuffers: config.int("max-frame-buffers") },
      maxBufferedBytes: config.values["max-buffered-bytes"] === undefined ? undefined : config.int("max-buffered-bytes"),
    });
  },
};
