import type { ConnectionOptions } from "node:tls";
import type { Clock, TimerHandle } from "../../core/clock.ts";
import { SinkCounter } from "../../core/counters.ts";
import { ChannelException } from "../../core/errors.ts";
import type { Event } from "../../core/event.ts";
import type { Status } from "../../core/sink.ts";
import type { Network } from "../../net/network.ts";
import { type ClientTlsSettings, clientTls } from "../../net/tls.ts";
import type { TakeLoop } from "../../pipeline/take-loop.ts";
import type { OptionsOf, Props } from "../../config/schema.ts";
import type { ComponentContext } from "../component.ts";
import { BaseSink } from "./base.ts";

/** What an RPC sink needs of its client (Avro's NettyAvroRpcClient, Thrift's ThriftRpcClient). */
export interface RpcClient {
  appendBatch(events: readonly Event[]): Promise<void>;
  isActive(): boolean;
  close(): void;
}

export interface RpcSinkSettings {
  hostname: string;
  port: number;
  batchSize: number;
  connectTimeout: number;
  requestTimeout: number;
  /** Seconds after which the connection is replaced (0: never), to rebalance behind a load balancer. */
  resetConnectionInterval: number;
  /** tls.connect options (see src/net/tls.ts clientTls); null: plain TCP. */
  tls: ConnectionOptions | null;
}

/** Where Flume's AbstractRpcSink sends, and how much per call: alike in both RPC sinks; peer names the source they send to. */
export function rpcSinkTargetProps(peer: string) {
  return {
    hostname: { type: "string", required: true, doc: `Host name or IP address of the ${peer} source` },
    port: { type: "int", required: true, min: 1, max: 65535, doc: `Port of the ${peer} source` },
    "batch-size": { type: "int", roles: ["batchSize"], default: 100, min: 1, doc: "Events taken per transaction and sent per appendBatch" },
  } as const satisfies Props;
}

/** The properties both RPC sinks declare, as their schemas parse them (the timeouts' docs differ, so each declares them). */
export type RpcSinkConfig = OptionsOf<ReturnType<typeof rpcSinkTargetProps>> &
  ClientTlsSettings & { "connect-timeout": number; "request-timeout": number; "reset-connection-interval": number };

/** The settings of an RPC sink from its parsed properties (connect-timeout as given: the avro sink maps small values to the default). */
export function rpcSinkSettings(config: RpcSinkConfig): RpcSinkSettings {
  return {
    hostname: config.hostname,
    port: config.port,
    batchSize: config["batch-size"],
    connectTimeout: config["connect-timeout"],
    requestTimeout: rpcTimeout(config["request-timeout"]),
    resetConnectionInterval: config["reset-connection-interval"],
    tls: clientTls(config),
  };
}

/** Where and how an RPC client connects: what both clients' connect() take. */
export interface RpcEndpoint {
  host: string;
  port: number;
  connectTimeout: number;
  requestTimeout: number;
  tls?: ConnectionOptions;
  clock: Clock;
  network?: Network;
}

/** Flume's RPC timeouts default to 20 s, and a value under one second means the default. */
export const DEFAULT_RPC_TIMEOUT = 20000;
export function rpcTimeout(ms: number): number {
  return ms < 1000 ? DEFAULT_RPC_TIMEOUT : ms;
}

/**
 * Flume's AbstractRpcSink, for the avro and thrift sinks: takes up to batch-size events in one
 * channel transaction and sends them as one appendBatch, committing on success. A failed call,
 * a timeout or a broken connection rolls the batch back, drops the connection and throws; the
 * runner backs off and the next process() reconnects and resends (at-least-once). A channel's
 * error is thrown too, keeping the connection. The connection is checked (and made) in every
 * transaction, and replaced every reset-connection-interval seconds.
 */
export abstract class RpcSink<C extends RpcClient> extends BaseSink {
  override readonly counter: SinkCounter;
  protected readonly takeLoop: TakeLoop;
  private client: C | null = null;
  private resetDue = false;
  private resetTimer: TimerHandle | null = null;
  /** The context's network (the simulator's virtual one); absent: TCP. */
  private readonly network: Network | undefined;

  constructor(
    ctx: ComponentContext,
    private readonly rpc: RpcSinkSettings,
  ) {
    super(ctx);
    this.network = ctx.network;
    this.counter = new SinkCounter(ctx.name, ctx.clock);
    this.takeLoop = this.newTakeLoop({
      label: this.label,
      counter: this.counter,
      batchSize: rpc.batchSize,
      // As Flume's AbstractRpcSink: a short batch is READY.
      underflow: "READY",
      target: () => `${rpc.hostname}:${rpc.port}`,
      prepare: () => (this.client?.isActive() ? undefined : this.verifyConnection()),
      deliver: (events) => (this.client as C).appendBatch(events),
      failed: (err) => {
        if (err instanceof ChannelException) return;
        if (this.neverConnected(err)) this.counter.values.ConnectionFailedCount++;
        this.destroyConnection();
      },
    });
  }

  get label(): string {
    return `Rpc sink ${this.name}`;
  }

  /** Opens a connection to the downstream source at `endpoint`; throws when it cannot. */
  protected abstract connect(endpoint: RpcEndpoint): Promise<C>;

  /** For the start line: the protocol and its options. */
  protected abstract describeClient(): string;

  /** Whether a failure means the connection was never really set up (a handshake that did not come back). */
  protected neverConnected(_err: unknown): boolean {
    return false;
  }

  override async start(): Promise<void> {
    this.counter.start();
    try {
      await this.createConnection();
    } catch (err) {
      this.logger.warn(`${this.label}: unable to create Rpc client using hostname ${this.rpc.hostname}, port ${this.rpc.port}: ${(err as Error).message}`);
      this.destroyConnection();
    }
    this.state = "START";
    this.logger.info(`${this.label} started (${this.describeClient()}).`);
  }

  override async stop(): Promise<void> {
    this.destroyConnection();
    this.cancelReset();
    this.counter.stop();
    this.state = "STOP";
    this.logger.info(`${this.label} stopped. Metrics: ${JSON.stringify(this.counter.values)}`);
  }

  override async process(): Promise<Status> {
    if (this.resetDue) {
      this.resetDue = false;
      this.destroyConnection();
      try {
        await this.createConnection();
      } catch (err) {
        this.logger.error(`${this.label}: error while resetting the connection: ${(err as Error).message}`);
      }
    }
    return super.process();
  }

  private async verifyConnection(): Promise<void> {
    if (this.client && !this.client.isActive()) this.destroyConnection();
    if (!this.client) await this.createConnection();
  }

  private async createConnection(): Promise<void> {
    if (this.client) return;
    this.logger.info(`${this.label}: building Rpc client with hostname ${this.rpc.hostname}, port ${this.rpc.port}`);
    try {
      const r = this.rpc;
      this.client = await this.connect({ host: r.hostname, port: r.port, connectTimeout: r.connectTimeout, requestTimeout: r.requestTimeout, tls: r.tls ?? undefined, clock: this.clock, network: this.network });
    } catch (err) {
      this.counter.values.ConnectionFailedCount++;
      throw err;
    }
    this.counter.values.ConnectionCreatedCount++;
    if (this.rpc.resetConnectionInterval > 0) {
      this.cancelReset();
      this.resetTimer = this.clock.setTimeout(() => {
        this.resetTimer = null;
        this.resetDue = true;
      }, this.rpc.resetConnectionInterval * 1000);
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
