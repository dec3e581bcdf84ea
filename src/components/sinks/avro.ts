import type { TimerHandle } from "../../core/clock.ts";
import { SinkCounter } from "../../core/counters.ts";
import { ChannelException, EventDeliveryException } from "../../core/errors.ts";
import type { Event } from "../../core/event.ts";
import type { Sink, Status } from "../../core/sink.ts";
import type { ConnectionOptions } from "node:tls";
import { AvroRpcClient } from "../../rpc/client.ts";
import { RpcHandshakeTimeoutError } from "../../rpc/errors.ts";
import { CLIENT_TLS_PROPS, clientTls, tlsProblems } from "../../net/tls.ts";
import type { CompressionType } from "../../rpc/transport.ts";
import type { Network } from "../../net/network.ts";
import { defineComponent, type ComponentContext } from "../component.ts";
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
  /** tls.connect options; null: plain TCP. */
  tls: ConnectionOptions | null;
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
  private readonly network: Network | undefined;

  constructor(
    ctx: ComponentContext,
    readonly options: AvroSinkOptions,
  ) {
    super(ctx);
    this.counter = new SinkCounter(ctx.name, ctx.clock);
    this.network = ctx.network;
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
        tls: o.tls ?? undefined,
        clock: this.clock,
        network: this.network,
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

function timeout(v: number): number {
  return v < MIN_TIMEOUT ? DEFAULT_TIMEOUT : v;
}

export const definition = defineComponent({
  kind: "sink",
  type: "avro",
  aliases: ["org.apache.flume.sink.AvroSink"],
  doc: "Sends events to an Avro source (another agent's, Flume TS or Apache Flume) over Avro RPC.",
  props: {
    hostname: { type: "string", required: true, doc: "Host name or IP address of the Avro source" },
    port: { type: "int", required: true, min: 1, max: 65535, doc: "Port of the Avro source" },
    "batch-size": { type: "int", roles: ["batchSize"], default: 100, min: 1, doc: "Events taken per transaction and sent per appendBatch" },
    "connect-timeout": { type: "int", default: DEFAULT_TIMEOUT, doc: "Milliseconds to connect (TCP and TLS), and again for the Avro handshake on the first call (values under 1000 mean the default, as in Flume)" },
    "request-timeout": { type: "int", default: DEFAULT_TIMEOUT, doc: "Milliseconds to wait for each later batch's answer (values under 1000 mean the default)" },
    "reset-connection-interval": { type: "int", default: 0, min: 0, doc: "Seconds after which the connection is re-established (0: never), so load balancers rebalance" },
    "compression-type": { type: "enum", values: ["none", "deflate"], default: "none", doc: "deflate to compress; the avro source must use the same" },
    "compression-level": { type: "int", default: 6, min: 0, max: 9, doc: "zlib level for deflate" },
    ...CLIENT_TLS_PROPS,
    maxIoWorkers: { type: "int", doc: "Accepted and ignored, as in Flume 1.11" },
  },
  validate: (config) => tlsProblems(() => clientTls(config)),
  create(config, ctx) {
    return new AvroSink(ctx, {
      hostname: config.hostname,
      port: config.port,
      batchSize: config["batch-size"],
      connectTimeout: timeout(config["connect-timeout"]),
      requestTimeout: timeout(config["request-timeout"]),
      resetConnectionInterval: config["reset-connection-interval"],
      compression: config["compression-type"] === "deflate" ? "deflate" : "none",
      compressionLevel: config["compression-level"],
      tls: clientTls(config),
    });
  },
});
