import type { ConnectionOptions } from "node:tls";
import type { TimerHandle } from "../../core/clock.ts";
import { SinkCounter } from "../../core/counters.ts";
import { ChannelException, EventDeliveryException } from "../../core/errors.ts";
import type { Event } from "../../core/event.ts";
import type { Sink, Status } from "../../core/sink.ts";
import type { PropError } from "../../config/schema.ts";
import { CLIENT_TLS_PROPS, clientTls, tlsProblems } from "../../net/tls.ts";
import { ThriftRpcClient } from "../../rpc/thrift/client.ts";
import { KERBEROS_UNSUPPORTED, PROTOCOL_DOC, resolveProtocol } from "../../rpc/thrift/options.ts";
import type { ThriftProtocolName } from "../../rpc/thrift/types.ts";
import { type ComponentContext, defineComponent } from "../component.ts";
import { BaseSink } from "./base.ts";

export interface ThriftSinkOptions {
  hostname: string;
  port: number;
  protocol: ThriftProtocolName;
  batchSize: number;
  connectTimeout: number;
  requestTimeout: number;
  /** Seconds after which the connection is replaced (0: never), to rebalance behind a load balancer. */
  resetConnectionInterval: number;
  /** tls.connect options (see src/net/tls.ts clientTls); null: plain TCP. */
  tls: ConnectionOptions | null;
}

/** Flume replaces request timeouts under one second by the default. */
const MIN_TIMEOUT = 1000;
const DEFAULT_TIMEOUT = 20000;

/**
 * Flume's thrift sink (AbstractRpcSink over ThriftRpcClient): takes up to batch-size events in
 * one channel transaction, sends them as one appendBatch, commits on Status OK. Any other
 * Status, a TApplicationException, a timeout or a broken connection rolls the batch back,
 * drops the connection and throws EventDeliveryException; the next process() reconnects and
 * resends (at-least-once).
 */
export class ThriftSink extends BaseSink implements Sink {
  readonly counter: SinkCounter;
  private client: ThriftRpcClient | null = null;
  private resetDue = false;
  private resetTimer: TimerHandle | null = null;

  constructor(
    ctx: ComponentContext,
    readonly options: ThriftSinkOptions,
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
    }
    this.state = "START";
    this.logger.info(`${this.label} started (thrift, ${this.options.protocol} protocol${this.options.tls ? ", TLS" : ""}).`);
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
      await this.createConnection().catch((err: Error) => this.logger.error(`${this.label}: error while resetting the connection: ${err.message}`));
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
        this.destroyConnection();
        throw new EventDeliveryException(`${this.label}: failed to send events to ${this.options.hostname}:${this.options.port}: ${(err as Error).message}`, { cause: err });
      }
    } finally {
      tx.close();
    }
    return status;
  }

  private async verifyConnection(): Promise<ThriftRpcClient> {
    if (this.client && !this.client.isActive()) this.destroyConnection();
    if (!this.client) await this.createConnection();
    return this.client as ThriftRpcClient;
  }

  private async createConnection(): Promise<void> {
    if (this.client) return;
    const o = this.options;
    this.logger.info(`${this.label}: building Rpc client with hostname ${o.hostname}, port ${o.port}`);
    try {
      this.client = await ThriftRpcClient.connect({
        host: o.hostname,
        port: o.port,
        protocol: o.protocol,
        connectTimeout: o.connectTimeout,
        requestTimeout: o.requestTimeout,
        tls: o.tls ?? undefined,
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

export const definition = defineComponent({
  kind: "sink",
  type: "thrift",
  aliases: ["org.apache.flume.sink.ThriftSink"],
  doc: "Sends events to a thrift source (another agent's, Flume TS or Apache Flume, or any ThriftSourceProtocol server) over framed Thrift RPC, binary or compact protocol.",
  props: {
    hostname: { type: "string", required: true, doc: "Host name or IP address of the thrift source" },
    port: { type: "int", required: true, min: 1, max: 65535, doc: "Port of the thrift source" },
    "batch-size": { type: "int", roles: ["batchSize"], default: 100, min: 1, doc: "Events taken per transaction and sent per appendBatch" },
    protocol: { type: "string", default: "compact", doc: `${PROTOCOL_DOC}; another value means compact, with a warning` },
    "connect-timeout": { type: "int", default: DEFAULT_TIMEOUT, min: 1, doc: "Milliseconds to connect (TCP and TLS). Flume 1.11's thrift client has no connect timeout; Flume TS applies this one" },
    "request-timeout": { type: "int", default: DEFAULT_TIMEOUT, doc: "Milliseconds to wait for each batch's answer (values under 1000 mean the default, as in Flume)" },
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
  create(config, ctx) {
    const requestTimeout = config["request-timeout"];
    return new ThriftSink(ctx, {
      hostname: config.hostname,
      port: config.port,
      protocol: resolveProtocol(config.protocol, (m) => ctx.logger.warn(`Rpc sink ${ctx.name}: ${m}`)),
      batchSize: config["batch-size"],
      connectTimeout: config["connect-timeout"],
      requestTimeout: requestTimeout < MIN_TIMEOUT ? DEFAULT_TIMEOUT : requestTimeout,
      resetConnectionInterval: config["reset-connection-interval"],
      tls: clientTls(config),
    });
  },
});
