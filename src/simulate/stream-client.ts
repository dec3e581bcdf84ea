/**
 * The client of a line source (netcat, syslogtcp) in `flume simulate`: another process, so it
 * survives the agent's crashes. It connects over the simulated network, where the faults of
 * its link apply, and sends each batch of its SimClient as lines in one write. When the source
 * answers every line (netcat's OK), a batch is accepted once every line is answered OK; a
 * FAILED, a connection gone, or no answer within ANSWER_TIMEOUT_MS, and it sends the batch again
 * (on a new connection). A source that does not answer (syslogtcp) has a batch accepted once
 * written: lines lost with a reset are lost, as they are for a real syslog sender.
 */
import type { VirtualClock } from "../core/virtual-clock.ts";
import type { NetSocket, Network } from "../net/network.ts";
import { CLIENT_RETRY_MS, type SimClient, type SimWorld } from "./components.ts";
import type { LinkPlan } from "./topology.ts";

/** How long a client waits for the answers to a batch before it gives the connection up (virtual ms). */
export const ANSWER_TIMEOUT_MS = 20_000;

type Outcome = "ok" | "failed" | "gone";

const NL = 10;
const F = "F".charCodeAt(0);

export class StreamClient {
  /** Events the source accepted (answered OK, or written when it does not answer). */
  accepted = 0;
  /** The client has sent everything and its last connection is closed. */
  finished = false;
  private socket: NetSocket | null = null;
  private waiting: ((outcome: Outcome) => void) | null = null;
  private expected = 0;
  private oks = 0;
  private fails = 0;
  /** The first byte of the answer line being read (-1: at a line start). */
  private lineStart = -1;

  constructor(
    private readonly client: SimClient,
    private readonly link: LinkPlan,
    private readonly network: Network,
    private readonly clock: VirtualClock,
    private readonly world: SimWorld,
  ) {}

  private get acks(): boolean {
    return this.link.feed?.acks ?? false;
  }

  start(): void {
    void this.loop();
  }

  private async loop(): Promise<void> {
    const c = this.client;
    const clock = this.clock;
    while (!c.exhausted) {
      if (c.pending === null) {
        const wait = c.nextDue - clock.now();
        if (wait > 0) await clock.sleep(wait);
        c.makeBatch();
        this.world.produced(c.pendingIds, c.name);
      } else if (c.attempts > 0) {
        c.retries++;
      }
      c.attempts++;
      const socket = await this.connection();
      const outcome = socket ? await this.send(socket) : "gone";
      if (outcome === "ok") {
        this.accepted += c.pendingIds.length;
        this.world.accepted(c.pendingIds, c.name);
        c.pending = null;
        c.attempts = 0;
        continue;
      }
      if (outcome === "failed") this.world.putFailed(c.pendingIds, c.name, new Error(`source ${this.link.source} answered FAILED`));
      else this.drop();
      await clock.sleep(CLIENT_RETRY_MS);
    }
    await this.close();
    this.finished = true;
  }

  /** The open connection, or a new one; null when it could not be made (refused: the agent is down). */
  private connection(): Promise<NetSocket | null> {
    if (this.socket !== null && !this.socket.destroyed) return Promise.resolve(this.socket);
    const l = this.link;
    return new Promise((resolve) => {
      const s = this.network.connect({ host: l.host, port: l.port });
      let settled = false;
      const settle = (v: NetSocket | null) => {
        if (settled) return;
        settled = true;
        resolve(v);
      };
      s.once("connect", () => {
        this.socket = s;
        settle(s);
      });
      s.on("error", () => settle(null));
      s.on("close", () => {
        if (this.socket === s) this.socket = null;
        this.answered("gone");
        settle(null);
      });
      s.on("data", (chunk) => this.read(chunk));
    });
  }

  /** Writes the pending batch as lines; with answers, waits for one per line. */
  private send(socket: NetSocket): Promise<Outcome> {
    const ids = this.client.pendingIds;
    const line = this.link.feed?.line ?? ((t: string) => t);
    let text = "";
    for (const id of ids) text += `${line(`event ${id}`)}\n`;
    if (!this.acks) return Promise.resolve(socket.write(text) ? "ok" : "gone");
    this.expected = ids.length;
    this.oks = 0;
    this.fails = 0;
    this.lineStart = -1;
    return new Promise((resolve) => {
      const timer = this.clock.setTimeout(() => this.answered("gone"), ANSWER_TIMEOUT_MS);
      this.waiting = (outcome) => {
        this.clock.clearTimeout(timer);
        resolve(outcome);
      };
      if (!socket.write(text)) this.answered("gone");
    });
  }

  /** Answers: "OK" or "FAILED: ..." per line. */
  private read(chunk: Uint8Array): void {
    for (let i = 0; i < chunk.length; i++) {
      const b = chunk[i];
      if (this.lineStart < 0) this.lineStart = b;
      if (b !== NL) continue;
      if (this.lineStart === F) this.fails++;
      else this.oks++;
      this.lineStart = -1;
    }
    if (this.waiting && this.oks + this.fails >= this.expected) this.answered(this.fails > 0 ? "failed" : "ok");
  }

  private answered(outcome: Outcome): void {
    const w = this.waiting;
    this.waiting = null;
    w?.(outcome);
  }

  /** Gives the connection up: answers still on their way must not count for the next batch. */
  private drop(): void {
    const s = this.socket;
    this.socket = null;
    s?.destroy();
  }

  /** Ends the last connection and waits until it is closed (what it sent was read by then). */
  private close(): Promise<void> {
    const s = this.socket;
    if (s === null || s.destroyed) return Promise.resolve();
    return new Promise((resolve) => {
      s.once("close", () => resolve());
      s.end();
    });
  }
}
