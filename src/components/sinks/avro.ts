import type { TimerHandle } from "../../core/clock.ts";
import { SinkCounter } from "../../core/counters.ts";
import { ChannelException, EventDeliveryException } from "../../core/errors.ts";
import type { Event } from "../../core/event.ts";
import type { Sink, Status } from "../../core/sink.ts";
import type { ComponentConfig } from "../../config/schema.ts";
import { AvroRpcClient } from "../../rpc/client.ts";
import { RpcHandshakeTimeoutError } from "../../rpc/errors.ts";
import { clientTlsOptions, type TlsSettings } from "../../rpc/tls.ts";
import type { CompressionType } from "../../rpc/transport.ts";
import type { ComponentContext, ComponentDefinition } from "../component.ts";
import { TLS_FILTER_PROPS } from "../sources/avro.ts";
import { BaseSink } from "./base.ts";

export interface AvroSinkOptions {
  hostname: string;
  port: number;
  batchSize: number;
  connectTimeout: number;
  requestTimeout: number;
  /** Seconds after which the connection is replaced (0: never), to rebalance behind a load balancer. */
  resetConnectionInterval: number;
  compression: CompressionType;
  compressionLevel: number;
  ssl: boolean;
  tls: TlsSettings;
}

/** Flume replaces timeouts under one second by the default. */
const MIN_TIMEOUT = 1000;
const DEFAULT_TIMEOUT = 20000;

/**
 * Flume's avro sink (AbstractRpcSink): takes up to batch-size events in one channel
 * transaction, sends them as one appendBatch, commits on OK. FAILED, a timeout or a broken
 * connection rolls the batch back, drops the connection and throws EventDeliveryException; the
 * runner backs off and the next process() reconnects and resends (at-least-once).
 */
export class AvroSink extends BaseSink implements Sink {
  readonly counter: SinkCounter;
  private client: AvroRpcClient | null = null;
  private resetDue = false;
  private resetTimer: TimerHandle | null = null;

  constructor(
    ctx: ComponentContext,
    readonly options: AvroSinkOptions,
  ) {
    super(ctx);
    this.counter = new SinkCounter(ctx.name, ctx.clock);
  }

  get label(): string {
    return `Rpc sink ${this.name}`;
  }

  async start(): Promise<void> {
    this.counter.start();
    try {
      await this.createConnection();
    } catch (err) {
      this.logger.warn(`${this.label}: unable to create Rpc client using hostname ${this.options.hostname}, port ${this.options.port}: ${(err as Error).message}`);
      this.destroyConnection();
    }
    this.state = "START";
    this.logger.info(`${this.label} started.`);
  }

  async stop(): Promise<void> {
    this.destroyConnection();
    this.cancelReset();
    this.counter.stop();
    this.state = "STOP";
    this.logger.info(`${this.label} stopped. Metrics: ${JSON.stringify(this.counter.values)}`);
  }

  async process(): Promise<Status> {
    if (this.resetDue) {
      this.resetDue = false;
      this.destroyConnection();
      try {
        await this.createConnection();
      } catch (err) {
        this.logger.error(`${this.label}: error while resetting the connection: ${(err as Error).message}`);
      }
    }
    const channel = this.getChannel();
    const tx = channel.getTransaction();
    const c = this.counter.values;
    let status: Status = "READY";
    tx.begin();
    try {
      const client = await this.verifyConnection();
      const batch: Event[] = [];
      const batchSize = this.options.batchSize;
      for (let i = 0; i < batchSize; i++) {
        const event = tx.take();
        if (event === null) break;
        batch.push(event);
      }
      const size = batch.length;
      if (size === 0) {
        c.BatchEmptyCount++;
        status = "BACKOFF";
      } else {
        if (size < batchSize) c.BatchUnderflowCount++;
        else c.BatchCompleteCount++;
        c.EventDrainAttemptCount += size;
        await client.appendBatch(batch);
      }
      await tx.commit();
      c.EventDrainSuccessCount += size;
    } catch (err) {
      await tx.rollback();
      if (err instanceof ChannelException) {
        c.ChannelReadFail++;
        this.logger.error(`${this.label}: unable to get events from channel ${channel.name}: ${err.message}`);
        status = "BACKOFF";
      } else {
        c.EventWriteFail++;
        // A handshake that never came back means the connection was never set up.
        if (err instanceof RpcHandshakeTimeoutError) c.ConnectionFailedCount++;
        this.destroyConnection();
        throw new EventDeliveryException(`${this.label}: failed to send events to ${this.options.hostname}:${this.options.port}: ${(err as Error).message}`, { cause: err });
      }
    } finally {
      tx.close();
    }
    return status;
  }

  private async verifyConnection(): Promise<AvroRpcClient> {
    if (this.client && !this.client.isActive()) this.destroyConnection();
    if (!this.client) await this.createConnection();
    return this.client as AvroRpcClient;
  }

  private async createConnection(): Promise<void> {
    if (this.client) return;
    const o = this.options;
    this.logger.info(`${this.label}: building Rpc client with hostname ${o.hostname}, port ${o.port}`);
    try {
      this.client = await AvroRpcClient.connect({
        host: o.hostname,
        port: o.port,
        connectTimeout: o.connectTimeout,
        requestTimeout: o.requestTimeout,
        compression: o.compression,
        compressionLevel: o.compressionLevel,
        tls: o.ssl ? clientTlsOptions(o.tls) : undefined,
        clock: this.clock,
      });
    } catch (err) {
      this.counter.values.ConnectionFailedCount++;
      throw err;
    }
    this.counter.values.ConnectionCreatedCount++;
    if (o.resetConnectionInterval > 0) {
      this.cancelReset();
      this.resetTimer = this.clock.setTimeout(() => {
        this.resetTimer = null;
        this.resetDue = true;
      }, o.resetConnectionInterval * 1000);
    }
  }

  private destroyConnection(): void {
    if (!this.client) return;
    this.client.close();
    this.client = null;
    this.counter.values.ConnectionClosedCount++;
  }

  private cancelReset(): void {
    if (this.resetTimer) this.clock.clearTimeout(this.resetTimer);
    this.resetTimer = null;
  }
}

function timeout(config: ComponentConfig, key: string): number {
  const v = config.int(key);
  return v < MIN_TIMEOUT ? DEFAULT_TIMEOUT : v;
}

export const definition: ComponentDefinition<AvroSink> = {
  schema: {
    kind: "sink",
    type: "avro",
    aliases: ["org.apache.flume.sink.AvroSink"],
    doc: "Sends events to an Avro source (another agent's, Flume TS or Apache Flume) over Avro RPC.",
    props: [
      { key: "hostname", type: "string", required: true, doc: "Host name or IP address of the Avro source" },
      { key: "port", type: "int", required: true, min: 1, max: 65535, doc: "Port of the Avro source" },
      { key: "batch-size", type: "int", default: 100, min: 1, doc: "Events taken per transaction and sent per appendBatch" },
      { key: "connect-timeout", type: "int", default: DEFAULT_TIMEOUT, doc: "Milliseconds to connect (TCP and TLS), and again for the Avro handshake on the first call (values under 1000 mean the default, as in Flume)" },
      { key: "request-timeout", type: "int", default: DEFAULT_TIMEOUT, doc: "Milliseconds to wait for each later batch's answer (values under 1000 mean the default)" },
      { key: "reset-connection-interval", type: "int", default: 0, min: 0, doc: "Seconds after which the connection is re-established (0: never), so load balancers rebalance" },
      { key: "compression-type", type: "enum", values: ["none", "deflate"], default: "none", doc: "deflate to compress; the avro source must use the same" },
      { key: "compression-level", type: "int", default: 6, min: 0, max: 9, doc: "zlib level for deflate" },
      { key: "ssl", type: "boolean", default: false, doc: "Connect with TLS" },
      { key: "trust-all-certs", type: "boolean", default: false, doc: "Accept any server certificate (no verification)" },
      { key: "truststore", type: "path", doc: "PEM file of trusted CA certificates (default: the system's)" },
      { key: "truststore-password", type: "string", secret: true, doc: "Accepted for compatibility; PEM truststores have no password" },
      { key: "truststore-type", type: "string", default: "PEM", doc: "PEM; Java key stores must be exported to PEM (the error says how)" },
      ...TLS_FILTER_PROPS,
      { key: "maxIoWorkers", type: "int", doc: "Accepted and ignored, as in Flume 1.11" },
    ],
  },
  validate(config) {
    const type = config.string("truststore-type").toUpperCase();
    if (config.boolean("ssl") && ["JKS", "PKCS12", "JCEKS"].includes(type)) {
      return [{ key: "truststore-type", message: `${type} trust stores are not read by Flume TS; export the CA certificates to PEM (keytool -exportcert -rfc -keystore <file> -alias <alias> -file ca.pem) and set truststore = ca.pem, truststore-type = PEM` }];
    }
    return [];
  },
  create(config, ctx) {
    return new AvroSink(ctx, {
      hostname: config.string("hostname"),
      port: config.int("port"),
      batchSize: config.int("batch-size"),
      connectTimeout: timeout(config, "connect-timeout"),
      requestTimeout: timeout(config, "request-timeout"),
      resetConnectionInterval: config.int("reset-connection-interval"),
      compression: config.string("compression-type") === "deflate" ? "deflate" : "none",
      compressionLevel: config.int("compression-level"),
      ssl: config.boolean("ssl"),
      tls: {
        truststore: config.optionalString("truststore"),
        truststoreType: config.string("truststore-type"),
        trustAllCerts: config.boolean("trust-all-certs"),
        excludeProtocols: config.list("exclude-protocols"),
        includeProtocols: config.list("include-protocols"),
        excludeCipherSuites: config.list("exclude-cipher-suites"),
        includeCipherSuites: config.list("include-cipher-suites"),
      },
    });
  },
};
