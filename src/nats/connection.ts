/**
 * One NATS connection of a component. The client packages are imported on first use (so
 * `flume --help` and `validate` never load them). Opening retries every reconnect-wait, with
 * a log line, until a server answers and the component's setup (stream, consumer) succeeds;
 * after that the client reconnects by itself and every change is logged.
 */
import { readFileSync } from "node:fs";
import type { MsgHdrs, NatsConnection } from "@nats-io/nats-core";
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { Clock, TimerHandle } from "../core/clock.ts";
import type { Logger } from "../core/logger.ts";
import { messageOf, NatsUnavailableError } from "./errors.ts";
import type { ConnectionSettings } from "./settings.ts";

export type JetStreamModule = typeof import("@nats-io/jetstream");
type TransportModule = typeof import("@nats-io/transport-node");

export interface NatsModules {
  transport: TransportModule;
  jetstream: JetStreamModule;
}

let modules: Promise<NatsModules> | null = null;

/** The NATS client packages, imported once per process on first use. */
export function loadNatsModules(): Promise<NatsModules> {
  modules ??= Promise.all([import("@nats-io/transport-node"), import("@nats-io/jetstream")]).then(([transport, jetstream]) => ({ transport, jetstream }));
  return modules;
}

export interface NatsClients {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  mod: JetStreamModule;
}

/** What a component does once connected (ensure its stream and consumer); a throw retries the whole open. */
export type SetupFn = (clients: NatsClients) => Promise<void>;

/** Logs the first failure of a streak and then one line every this many ms. */
const FAILURE_LOG_EVERY = 30_000;

export class NatsLink {
  nc: NatsConnection | null = null;
  js: JetStreamClient | null = null;
  jsm: JetStreamManager | null = null;
  mods: NatsModules | null = null;
  /** True once connected and set up; false while the connection is down. */
  ready = false;
  lastError: string | null = null;
  private closing = false;
  private retryTimer: TimerHandle | null = null;
  private wake: (() => void) | null = null;
  private readyWaiters: (() => void)[] = [];
  private opening: Promise<void> | null = null;

  constructor(
    readonly label: string,
    readonly settings: ConnectionSettings,
    private readonly setup: SetupFn,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {}

  /** Starts connecting in the background; never throws (failures are logged and retried). */
  open(): void {
    this.closing = false;
    this.opening ??= this.openLoop().finally(() => (this.opening = null));
  }

  /** A fresh header set (the client's constructor). */
  headers(): MsgHdrs {
    if (!this.mods) throw new NatsUnavailableError(`${this.label}: the NATS client is not loaded yet`);
    return this.mods.transport.headers();
  }

  /** Resolves when the link is ready, or after ms (false). */
  whenReady(ms: number): Promise<boolean> {
    if (this.ready) return Promise.resolve(true);
    if (this.closing) return Promise.resolve(false);
    return new Promise((resolve) => {
      const timer = this.clock.setTimeout(() => {
        this.readyWaiters = this.readyWaiters.filter((w) => w !== done);
        resolve(false);
      }, ms);
      const done = () => {
        this.clock.clearTimeout(timer);
        resolve(this.ready);
      };
      this.readyWaiters.push(done);
    });
  }

  requireReady(): { nc: NatsConnection; js: JetStreamClient; jsm: JetStreamManager } {
    if (!this.ready || !this.nc || !this.js || !this.jsm) {
      throw new NatsUnavailableError(`${this.label}: not connected to NATS (${this.describeServers()})${this.lastError ? `: ${this.lastError}` : ""}`);
    }
    return { nc: this.nc, js: this.js, jsm: this.jsm };
  }

  /** The server URLs for log lines, with any user:password@ in them masked. */
  describeServers(): string {
    return this.settings.servers.map((u) => u.replace(/\/\/[^/@]*@/, "//***@")).join(",");
  }

  async close(): Promise<void> {
    const nc = this.detach();
    if (nc && !nc.isClosed()) {
      // drain flushes what is buffered (acks, naks) before closing.
      await nc.drain().catch(() => nc.close().catch(() => {}));
    }
    await this.opening?.catch(() => {});
  }

  /**
   * Drops the connection as a killed process would: nothing buffered is flushed, no
   * subscription is drained; the server sees the client go.
   */
  async crash(): Promise<void> {
    const nc = this.detach();
    // close() (unlike drain()) destroys the socket without writing what is still queued.
    if (nc && !nc.isClosed()) await nc.close().catch(() => {});
    await this.opening?.catch(() => {});
  }

  /** Stops retrying, wakes every waiter and forgets the connection, which it returns for the caller to drain or drop. */
  private detach(): NatsConnection | null {
    this.closing = true;
    this.ready = false;
    if (this.retryTimer) this.clock.clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.wake?.();
    this.flushWaiters();
    const nc = this.nc;
    this.nc = this.js = this.jsm = null;
    return nc;
  }

  private flushWaiters(): void {
    for (const w of this.readyWaiters.splice(0)) w();
  }

  private async openLoop(): Promise<void> {
    let failingSince = 0;
    let lastLogged = 0;
    let attempts = 0;
    while (!this.closing) {
      let nc: NatsConnection | null = null;
      try {
        this.mods ??= await loadNatsModules();
        nc = await this.mods.transport.connect(this.connectOptions());
        if (this.closing) {
          await nc.close();
          return;
        }
        this.nc = nc;
        this.js = this.mods.jetstream.jetstream(nc, { timeout: this.settings.requestTimeout });
        this.jsm = await this.mods.jetstream.jetstreamManager(nc, { timeout: this.settings.requestTimeout, checkAPI: false });
        await this.setup({ nc, js: this.js, jsm: this.jsm, mod: this.mods.jetstream });
        if (this.closing) return;
        this.ready = true;
        this.lastError = null;
        this.logger.info(`${this.label}: connected to NATS at ${nc.getServer()}${attempts > 0 ? ` after ${attempts + 1} attempts` : ""}`);
        this.flushWaiters();
        this.watch(nc);
        return;
      } catch (err) {
        attempts++;
        this.lastError = messageOf(err);
        this.ready = false;
        if (nc) await nc.close().catch(() => {});
        if (this.nc === nc) this.nc = this.js = this.jsm = null;
        const now = this.clock.now();
        if (failingSince === 0) failingSince = now;
        if (lastLogged === 0 || now - lastLogged >= FAILURE_LOG_EVERY) {
          lastLogged = now;
          this.logger.warn(
            `${this.label}: cannot use NATS at ${this.describeServers()}: ${this.lastError}; retrying every ${this.settings.reconnectWait} ms` +
              (attempts > 1 ? ` (${attempts} attempts over ${Math.round((now - failingSince) / 1000)} s)` : ""),
          );
        }
        await new Promise<void>((resolve) => {
          this.wake = resolve;
          this.retryTimer = this.clock.setTimeout(resolve, this.settings.reconnectWait);
        });
        this.wake = null;
        this.retryTimer = null;
      }
    }
  }

  /** Logs connection changes; if the client gives up for good, opens again. */
  private watch(nc: NatsConnection): void {
    void (async () => {
      for await (const s of nc.status()) {
        if (this.nc !== nc) return;
        if (s.type === "disconnect") {
          this.logger.warn(`${this.label}: disconnected from NATS server ${s.server}; reconnecting`);
        } else if (s.type === "reconnect") {
          this.logger.info(`${this.label}: reconnected to NATS server ${s.server}`);
        } else if (s.type === "error") {
          this.logger.warn(`${this.label}: NATS connection error: ${messageOf(s.error)}`);
        }
      }
    })().catch(() => {});
    void nc.closed().then((err) => {
      if (this.nc !== nc || this.closing) return;
      this.ready = false;
      this.nc = this.js = this.jsm = null;
      this.lastError = err ? messageOf(err) : "connection closed";
      this.logger.warn(`${this.label}: NATS connection closed (${this.lastError}); opening a new one`);
      this.open();
    });
  }

  private connectOptions(): Parameters<TransportModule["connect"]>[0] {
    const s = this.settings;
    const authenticator = s.credsFile ? this.mods?.transport.credsAuthenticator(readFileSync(s.credsFile)) : undefined;
    return {
      servers: s.servers,
      name: this.label,
      timeout: s.connectTimeout,
      maxReconnectAttempts: -1,
      reconnectTimeWait: s.reconnectWait,
      pingInterval: 10_000,
      maxPingOut: 3,
      user: s.user,
      pass: s.password,
      token: s.token,
      authenticator,
      // node:tls options from src/net/tls.ts; the transport hands them to tls.connect as they are.
      tls: s.tls ? (s.tls as NonNullable<Parameters<TransportModule["connect"]>[0]>["tls"]) : undefined,
    };
  }
}
