/**
 * The simulated network of a tier: connections between agents on virtual time, given to the
 * real avro sink and source through their context (ComponentContext.network), so their RPC
 * client and server (src/rpc/) run unchanged: framing, handshake, appendBatch, Status FAILED,
 * timeouts, reconnects. Only the sockets are simulated.
 *
 * A connection carries each write as one chunk, in order per direction, after the link's
 * latency. Faults per link: a request lost with the connection reset (--link-fail), an
 * answer lost after the receiver committed (--lose-answer: the sender waits for its
 * request-timeout), a partition holding every packet until it heals (what TCP's retransmission
 * amounts to; a sender that timed out meanwhile has closed its side, whose reset then follows
 * the requests it had sent), latency. A crashed agent's sockets go silent and its peers get a reset.
 */
import { EventEmitter } from "node:events";
import type { NetListener, NetSocket, Network } from "../net/network.ts";
import type { VirtualClock } from "../core/virtual-clock.ts";
import type { Random } from "./rng.ts";
import { seededRandom } from "./rng.ts";

/** A link between two agents of a tier: one avro sink of `from` sending to one avro source of `to`. */
export interface LinkEnds {
  name: string;
  from: string;
  sink: string;
  to: string;
  source: string;
  host: string;
  port: number;
}

export interface LinkFaults {
  failRate: number;
  loseAnswerRate: number;
  latency: number;
  partitions: { from: number; to: number }[];
}

export interface LinkStats {
  /** Connections established. */
  connections: number;
  /** Connection attempts refused (nobody listening: the receiver was down). */
  refused: number;
  /** Requests sent (appendBatch calls, the first with the Avro handshake). */
  requests: number;
  /** Answers that reached the sender. */
  answers: number;
  /** Requests lost with the connection reset (--link-fail). */
  requestsFailed: number;
  /** Answers lost after the receiver had processed the request (--lose-answer). */
  answersLost: number;
  /** Packets a partition held until it healed. */
  heldByPartition: number;
  /** Connections reset because an end crashed. */
  resets: number;
}

type Arrival = Buffer | "end" | "reset";

class SimSocket extends EventEmitter implements NetSocket {
  destroyed = false;
  readonly writableLength = 0;
  readonly writableHighWaterMark = 16384;
  private paused = false;
  private readonly inbox: Arrival[] = [];
  private readEnded = false;
  private writeEnded = false;
  /** The owner crashed: nothing more happens on this socket. */
  dead = false;

  constructor(
    private readonly conn: Connection,
    readonly owner: string,
    readonly remoteAddress: string,
    readonly remotePort: number,
    private readonly allowHalfOpen: boolean,
    readonly localPort = 0,
  ) {
    super();
  }

  get writableEnded(): boolean {
    return this.writeEnded;
  }

  setNoDelay(): this {
    return this;
  }

  write(chunk: Uint8Array | string): boolean {
    if (this.destroyed || this.writeEnded) return false;
    this.conn.send(this, Buffer.isBuffer(chunk) ? chunk : typeof chunk === "string" ? Buffer.from(chunk) : Buffer.from(chunk));
    return true;
  }

  end(chunk?: Uint8Array | string): this {
    if (this.destroyed || this.writeEnded) return this;
    if (chunk !== undefined) this.write(chunk);
    this.writeEnded = true;
    this.conn.deliver(this, "end");
    this.closeIfDone();
    return this;
  }

  destroy(): this {
    if (this.destroyed) return this;
    this.destroyed = true;
    this.conn.deliver(this, "reset");
    queueMicrotask(() => this.emit("close", false));
    return this;
  }

  pause(): this {
    this.paused = true;
    return this;
  }

  resume(): this {
    if (!this.paused) return this;
    this.paused = false;
    queueMicrotask(() => {
      while (!this.paused && this.inbox.length > 0) this.handle(this.inbox.shift() as Arrival);
    });
    return this;
  }

  /** What the peer sent, arriving now. */
  arrive(item: Arrival): void {
    if (this.destroyed || this.dead) return;
    if (this.paused && item !== "reset") this.inbox.push(item);
    else this.handle(item);
  }

  /** The owner crashed: the process is gone, so is everything it would have done. */
  kill(): void {
    this.dead = true;
    this.destroyed = true;
    this.removeAllListeners();
  }

  private handle(item: Arrival): void {
    if (this.destroyed) return;
    if (item === "reset") {
      this.destroyed = true;
      const err = Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });
      if (this.listenerCount("error") > 0) this.emit("error", err);
      this.emit("close", true);
      return;
    }
    if (item === "end") {
      this.readEnded = true;
      this.emit("end");
      if (!this.allowHalfOpen) this.end();
      this.closeIfDone();
      return;
    }
    this.emit("data", item);
  }

  private closeIfDone(): void {
    if (!this.readEnded || !this.writeEnded || this.destroyed) return;
    this.destroyed = true;
    queueMicrotask(() => this.emit("close", false));
  }
}

/** One direction of a connection: what was sent arrives in order. */
interface Pipe {
  lastArrival: number;
  /** Packets waiting for a virtual timer: a later one must wait behind them, even if due now. */
  inFlight: number;
}

class Connection {
  server: SimSocket | null = null;
  readonly client: SimSocket;
  private readonly up: Pipe = { lastArrival: 0, inFlight: 0 };
  private readonly down: Pipe = { lastArrival: 0, inFlight: 0 };

  constructor(readonly link: SimLink) {
    this.client = new SimSocket(this, link.ends.from, link.ends.host, link.ends.port, false);
  }

  private peerOf(s: SimSocket): SimSocket | null {
    return s === this.client ? this.server : this.client;
  }

  /** A write of socket `from`: a request (client side) or an answer (server side). */
  send(from: SimSocket, chunk: Buffer): void {
    const link = this.link;
    if (from === this.client) {
      link.stats.requests++;
      if (link.faults.failRate > 0 && link.failRandom() < link.faults.failRate) {
        link.stats.requestsFailed++;
        // The request is lost and the connection reset: both ends see it go.
        this.deliver(from, "reset");
        queueMicrotask(() => from.arrive("reset"));
        return;
      }
    } else if (link.faults.loseAnswerRate > 0 && link.loseRandom() < link.faults.loseAnswerRate) {
      link.stats.answersLost++;
      return;
    } else {
      link.stats.answers++;
    }
    this.deliver(from, chunk);
  }

  /** Carries item from socket `from` to its peer, after the link's delays, in order. */
  deliver(from: SimSocket, item: Arrival): void {
    this.carry(from === this.client ? this.up : this.down, this.link.arrival(), () => this.peerOf(from)?.arrive(item));
  }

  private carry(pipe: Pipe, arrival: number, fn: () => void): void {
    const at = Math.max(pipe.lastArrival, arrival);
    pipe.lastArrival = at;
    this.link.at(at, pipe, fn);
  }

  /** The first packet: the server side is made when it arrives (if anyone listens then). */
  open(network: SimNetwork): void {
    const link = this.link;
    this.carry(this.up, link.arrival(), () => {
      if (this.client.destroyed) return;
      const listener = network.listenerOf(link.ends.to, link.ends.source);
      if (!listener) {
        link.stats.refused++;
        this.carry(this.down, link.arrival(), () => {
          if (this.client.destroyed || this.client.dead) return;
          this.client.destroyed = true;
          const err = Object.assign(new Error(`connect ECONNREFUSED ${link.ends.host}:${link.ends.port}`), { code: "ECONNREFUSED" });
          if (this.client.listenerCount("error") > 0) this.client.emit("error", err);
        });
        return;
      }
      link.stats.connections++;
      this.server = new SimSocket(this, link.ends.to, link.ends.from, network.nextPort(), listener.allowHalfOpen, link.ends.port);
      network.track(this);
      listener.onConnection(this.server);
      this.carry(this.down, link.arrival(), () => {
        if (!this.client.destroyed && !this.client.dead) this.client.emit("connect");
      });
    });
  }

  /** Agent `agent` crashed: its side goes silent, the other side gets a reset. */
  crash(agent: string): void {
    for (const s of [this.client, this.server]) {
      if (!s || s.owner !== agent || s.dead) continue;
      const wasOpen = !s.destroyed;
      s.kill();
      const peer = this.peerOf(s);
      if (wasOpen && peer && !peer.destroyed) {
        this.link.stats.resets++;
        this.deliver(s, "reset");
      }
    }
  }

  get finished(): boolean {
    return this.client.destroyed && (this.server === null || this.server.destroyed);
  }
}

export class SimLink {
  readonly stats: LinkStats = { connections: 0, refused: 0, requests: 0, answers: 0, requestsFailed: 0, answersLost: 0, heldByPartition: 0, resets: 0 };
  readonly failRandom: Random;
  readonly loseRandom: Random;

  constructor(
    readonly ends: LinkEnds,
    readonly faults: LinkFaults,
    private readonly clock: VirtualClock,
    seed: number,
    index: number,
  ) {
    this.failRandom = seededRandom(seed, 1000 + 2 * index);
    this.loseRandom = seededRandom(seed, 1001 + 2 * index);
  }

  /** When a packet sent now arrives: after the latency, and not while the link is partitioned. */
  arrival(): number {
    const now = this.clock.now();
    let t = this.healed(now);
    t = this.healed(t + this.faults.latency);
    if (t > now + this.faults.latency) this.stats.heldByPartition++;
    return t;
  }

  private healed(t: number): number {
    for (const w of this.faults.partitions) if (t >= w.from && t < w.to) t = w.to;
    return t;
  }

  /** Runs fn at virtual time t: at once (after the current work) when t is now and nothing of the pipe waits. */
  at(t: number, pipe: Pipe, fn: () => void): void {
    const now = this.clock.now();
    if (t <= now && pipe.inFlight === 0) {
      queueMicrotask(fn);
      return;
    }
    pipe.inFlight++;
    this.clock.setTimeout(() => {
      pipe.inFlight--;
      fn();
    }, Math.max(0, t - now));
  }

  /** Whether the link is partitioned at time t. */
  partitionedAt(t: number): boolean {
    return this.faults.partitions.some((w) => t >= w.from && t < w.to);
  }
}

interface Listening {
  allowHalfOpen: boolean;
  onConnection(socket: NetSocket): void;
}

export class SimNetwork {
  readonly links: SimLink[];
  private readonly listeners = new Map<string, Listening>();
  private connections = new Set<Connection>();
  private port = 40000;

  constructor(
    ends: LinkEnds[],
    faults: (ends: LinkEnds) => LinkFaults,
    clock: VirtualClock,
    seed: number,
  ) {
    this.links = ends.map((e, k) => new SimLink(e, faults(e), clock, seed, k));
  }

  /** The network as component `component` of agent `agent` sees it. */
  endpoint(agent: string, component: string): Network {
    return {
      connect: (o) => {
        const link = this.links.find((l) => l.ends.from === agent && l.ends.sink === component && l.ends.port === o.port);
        if (!link) return refusedSocket(`${o.host}:${o.port}`);
        const conn = new Connection(link);
        this.track(conn);
        conn.open(this);
        return conn.client;
      },
      listen: (o, onConnection) => {
        const key = `${agent}/${component}`;
        this.listeners.set(key, { allowHalfOpen: o.allowHalfOpen ?? false, onConnection });
        const listener: NetListener = {
          port: o.port,
          close: async () => {
            if (this.listeners.get(key)?.onConnection === onConnection) this.listeners.delete(key);
          },
        };
        return Promise.resolve(listener);
      },
    };
  }

  listenerOf(agent: string, source: string): Listening | undefined {
    return this.listeners.get(`${agent}/${source}`);
  }

  nextPort(): number {
    return ++this.port;
  }

  track(conn: Connection): void {
    this.connections.add(conn);
  }

  /** Agent `agent` crashed: it listens no more, its connections are reset. */
  crash(agent: string): void {
    for (const key of [...this.listeners.keys()]) if (key.startsWith(`${agent}/`)) this.listeners.delete(key);
    for (const c of this.connections) {
      c.crash(agent);
      if (c.finished) this.connections.delete(c);
    }
  }

  /** The end of a run: every agent goes. */
  shutdown(): void {
    for (const c of this.connections) {
      c.client.kill();
      c.server?.kill();
    }
    this.connections.clear();
    this.listeners.clear();
  }

  /** Forgets finished connections (called now and then; a long run opens many). */
  sweep(): void {
    for (const c of this.connections) if (c.finished) this.connections.delete(c);
  }
}

/** A socket that fails to connect at once: no agent of the tier listens at that address. */
function refusedSocket(address: string): NetSocket {
  const s = new EventEmitter() as EventEmitter & NetSocket;
  Object.assign(s, { destroyed: true, writableEnded: true, writableLength: 0, writableHighWaterMark: 0, remoteAddress: undefined, remotePort: undefined });
  const self = () => s;
  Object.assign(s, { setNoDelay: self, write: () => false, end: self, destroy: self, pause: self, resume: self });
  queueMicrotask(() => s.emit("error", Object.assign(new Error(`connect ECONNREFUSED ${address} (no agent of the simulated tier listens there)`), { code: "ECONNREFUSED" })));
  return s;
}
