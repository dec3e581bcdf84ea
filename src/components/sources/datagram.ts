import type { Event } from "../../core/event.ts";
import type { EventDrivenSource } from "../../core/source.ts";
import { listenUdp, type UdpListener } from "../../net/datagram.ts";
import type { ComponentContext } from "../component.ts";
import { BaseSource } from "./base.ts";

/** Events held while the channel is busy; beyond this, datagrams are dropped (UDP cannot push back). */
export const DEFAULT_UDP_BACKLOG = 10000;

export interface DatagramOptions {
  host: string | undefined;
  port: number;
  maxBacklog: number;
}

/**
 * A UDP source: datagrams become events; those that arrive while a batch waits on the channel
 * are queued, up to maxBacklog events, and go out together as the next batch (retried until
 * the channel takes it). UDP has no way to slow the sender, so past that bound datagrams are
 * dropped, counted as ChannelWriteFail and reported in the log.
 */
export abstract class DatagramSource extends BaseSource implements EventDrivenSource {
  readonly kind = "event-driven";
  private socket: UdpListener | null = null;
  private backlog: Event[] = [];
  private flushing = false;
  private scheduled = false;
  private dropped = 0;

  constructor(
    ctx: ComponentContext,
    readonly datagramOptions: DatagramOptions,
    /** Names the source in logs ("syslogudp source r1"). */
    private readonly label: string,
  ) {
    super(ctx, { label });
  }

  protected describe(): string {
    return this.label;
  }

  get port(): number {
    return this.socket?.port ?? this.datagramOptions.port;
  }

  /** Appends the events of one datagram to `out`. */
  protected abstract toEvents(data: Uint8Array, ip: string, port: number, out: Event[]): void;

  /** A last step before a batch is delivered (reverse lookups). */
  protected async prepare(_batch: Event[]): Promise<void> {}

  async start(): Promise<void> {
    this.beginStart();
    const host = this.datagramOptions.host || undefined;
    this.socket = await listenUdp(
      { host, port: this.datagramOptions.port },
      (data, ip, port) => this.receive(data, ip, port),
      (err) => this.logger.error(`${this.describe()}: ${err.message}`),
    );
    this.state = "START";
    this.logger.info(`${this.describe()} listening on ${host ?? "*"}:${this.port} (UDP)`);
  }

  async stop(): Promise<void> {
    // A batch waiting for room gives up; what is queued gets one last attempt.
    this.emitter.stop();
    const socket = this.socket;
    this.socket = null;
    await socket?.close();
    while (this.flushing) await this.clock.sleep(10);
    if (this.backlog.length > 0) await this.flush();
    this.counter.stop();
    this.state = "STOP";
  }

  private receive(data: Uint8Array, ip: string, port: number): void {
    if (this.backlog.length >= this.datagramOptions.maxBacklog) {
      if (this.dropped++ === 0)
        this.logger.error(`${this.describe()}: channel is not keeping up; dropping datagrams (from ${ip}:${port} and others) beyond ${this.datagramOptions.maxBacklog} queued events`);
      this.counter.values.ChannelWriteFail++;
      return;
    }
    this.toEvents(data, ip, port, this.backlog);
    if (!this.scheduled && !this.flushing) {
      this.scheduled = true;
      // Let the datagrams already waiting in the socket join this batch.
      setImmediate(() => {
        this.scheduled = false;
        void this.flush();
      });
    }
  }

  private async flush(): Promise<void> {
    if (this.flushing) return;
    this.flushing = true;
    try {
      while (this.backlog.length > 0) {
        const batch = this.backlog;
        this.backlog = [];
        try {
          await this.prepare(batch);
          if (!(await this.emitter.deliver(batch, { from: "UDP clients" }))) this.logger.error(`${this.label}: stopping; dropped ${batch.length} events the channel did not take`);
        } catch (err) {
          this.emitter.failed(err, `dropped ${batch.length} events`);
        }
        if (this.dropped > 0) {
          this.logger.warn(`${this.describe()}: ${this.dropped} datagrams were dropped while the channel was full`);
          this.dropped = 0;
        }
      }
    } finally {
      this.flushing = false;
    }
  }
}
