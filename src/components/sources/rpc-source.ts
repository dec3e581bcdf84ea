import type { EventDrivenSource } from "../../core/source.ts";
import type { Network } from "../../net/network.ts";
import { type ServerTls, serverTls, type ServerTlsSettings } from "../../net/tls.ts";
import type { ComponentContext } from "../component.ts";
import { BaseSource } from "./base.ts";

/** What an RPC source needs of its server (Avro's or Thrift's): listen and close. */
export interface RpcServer {
  /** Starts listening; resolves with the bound port. */
  listen(): Promise<number>;
  close(): Promise<void>;
}

/** What the server is told about the source it serves (its counters and logs). */
export interface RpcServerHooks {
  label: string;
  onConnectionCountChange(count: number): void;
  network: Network | undefined;
}

/**
 * Flume's RPC sources (avro, thrift): a server whose calls put their events through the
 * source's emitter (one attempt each: the client keeps the events and retries a FAILED call).
 * The source owns the server's lifecycle, its OpenConnectionCount and its start and stop lines.
 */
export abstract class RpcSource<S extends RpcServer> extends BaseSource implements EventDrivenSource {
  readonly kind = "event-driven";
  private server: S | null = null;
  private boundPort = 0;
  private readonly network: Network | undefined;
  /** The TLS setup from the source's ssl properties, or null. */
  protected readonly tls: ServerTls | null;

  constructor(
    ctx: ComponentContext,
    readonly label: string,
    private readonly address: { bind: string; port: number } & ServerTlsSettings,
  ) {
    super(ctx, { label });
    this.network = ctx.network;
    this.tls = serverTls(address);
  }

  /** The port actually bound (useful with port 0). */
  get port(): number {
    return this.boundPort || this.address.port;
  }

  /** The server, given the hooks that connect it to this source. */
  protected abstract createServer(hooks: RpcServerHooks): S;

  /** For the start line: the protocol and its options, e.g. "(TLS) (deflate)". */
  protected abstract describeServer(): string;

  async start(): Promise<void> {
    const { bind, port } = this.address;
    this.beginStart();
    const server = this.createServer({ label: this.label, onConnectionCountChange: (n) => this.counter.set("OpenConnectionCount", n), network: this.network });
    try {
      this.boundPort = await server.listen();
    } catch (err) {
      this.state = "ERROR";
      throw new Error(`${this.label}: cannot listen on ${bind}:${port}: ${(err as Error).message}`, { cause: err });
    }
    this.server = server;
    this.state = "START";
    this.logger.info(`${this.label} started on ${bind}:${this.port}${this.describeServer()}`);
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = null;
    this.emitter.stop();
    if (server) await server.close();
    this.counter.set("OpenConnectionCount", 0);
    this.counter.stop();
    this.state = "STOP";
    this.logger.info(`${this.label} stopped. Metrics: ${JSON.stringify(this.counter.values)}`);
  }
}
