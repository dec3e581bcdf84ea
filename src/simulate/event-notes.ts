/**
 * Event histories of a simulation: the events asked for (--explain, or the first lost one and
 * an example of each duplicate cause, in a second run) are watched, and every step that moves
 * one of them adds a line to its history.
 */
import type { Clock } from "../core/clock.ts";
import type { Event } from "../core/event.ts";
import type { Logger } from "../core/logger.ts";
import type { AgentState } from "./agent-state.ts";
import type { Ledger } from "./ledger.ts";
import { formatTime } from "./options.ts";
import type { EventHistory, HistoryKind } from "./simulation-result.ts";
import type { Topology } from "./topology.ts";
import { simIdOf } from "./event-ids.ts";

export class EventNotes {
  /** Per event id: 1 when watched. */
  readonly watched: Uint8Array;
  /** Whether any event of the run is watched (most runs watch none). */
  readonly watching: boolean;
  /** The lines told so far, per watched event. */
  readonly lines = new Map<number, string[]>();

  constructor(
    private readonly events: number,
    watch: readonly number[],
    private readonly clock: Clock,
    private readonly topo: Topology,
  ) {
    this.watched = new Uint8Array(events);
    for (const id of watch) if (id >= 0 && id < events) this.watched[id] = 1;
    this.watching = watch.some((id) => id >= 0 && id < events);
    for (const id of watch) this.lines.set(id, []);
  }

  say(id: number, agent: string | undefined, text: string): void {
    const lines = this.lines.get(id);
    if (!lines) return;
    const who = this.topo.tier && agent ? `${agent}: ` : "";
    lines.push(`${formatTime(this.clock.now()).padStart(10)}  ${who}${text}`);
  }

  watchedNote(i: number, ch: number, text: string): void {
    if (i >= 0 && i < this.watched.length && this.watched[i]) this.say(i, this.topo.channels[ch].agent, text);
  }

  eachWatched(events: readonly Event[], fn: (id: number) => void): void {
    if (!this.watching) return;
    for (const e of events) {
      const id = simIdOf(e);
      if (id >= 0 && id < this.watched.length && this.watched[id]) fn(id);
    }
  }

  eachWatchedId(ids: readonly number[], fn: (id: number) => void): void {
    if (!this.watching) return;
    for (const id of ids) if (id >= 0 && id < this.watched.length && this.watched[id]) fn(id);
  }

  /** A logger per component: silent, except that it tells a watched event why its take rolled back. */
  loggerFor(a: AgentState, name: string): Logger {
    const hear = (message: string) => {
      const w = a.why;
      if (!w || !w.names.has(name)) return;
      a.why = null;
      for (const id of w.ids) this.say(id, a.name, `  why: ${message}`);
    };
    return { debug() {}, info() {}, warn: hear, error: hear };
  }

  /** At a crash of agent a: what becomes of each watched event one of its channels holds. */
  crashFates(a: AgentState, partial: ReadonlyMap<number, number[]>, ledger: Ledger, down: number): void {
    if (!this.watching) return;
    const restart = down > 0 ? `; ${a.name} is down until ${formatTime(this.clock.now() + down)}` : "";
    for (const c of a.plan.channels) {
      const part = partial.get(c.index);
      for (let id = 0; id < this.watched.length; id++) {
        if (!this.watched[id] || ledger.heldOf(c.index, id) === 0) continue;
        const fate = part
          ? part.includes(id)
            ? `CRASH: ${c.type} channel ${c.name} loses the events it holds in memory, this event with them`
            : `CRASH: it stays in the overflow on disk of ${c.type} channel ${c.name}`
          : c.durable
            ? `CRASH: it stays in ${c.type} channel ${c.name}, which keeps committed events`
            : `CRASH: ${c.type} channel ${c.name} loses its contents, this event with them`;
        this.say(id, a.name, `${fate}${restart}`);
      }
    }
  }

  /** What became of a watched event, told line by line. */
  history(id: number, produced: number, ledger: Ledger): EventHistory {
    const lines = this.lines.get(id) ?? [];
    if (id < 0 || id >= this.events || id >= produced) return { id, kind: "never produced", lines: [`event ${id} was never produced (this run produced ids 0 to ${produced - 1})`] };
    const state = ledger.eventState(id);
    let kind: HistoryKind;
    if (state.length === 0) kind = "not accepted";
    else if (state.some((s) => s.lost)) kind = "lost";
    else if (state.some((s) => s.delivered > 1)) kind = "duplicated";
    else if (state.some((s) => s.held > 0)) kind = "still in a channel";
    else kind = "clean";
    const summary = state.map((s) => `${s.channel}: committed ${s.puts}x, ${s.delivered > 0 ? `delivered ${s.delivered}x` : s.forwarded > 0 ? `forwarded ${s.forwarded}x` : s.lost ? "LOST" : s.held > 0 ? "still there" : "left"}`);
    const out: EventHistory = { id, kind, lines: [...lines, `  in the end: ${summary.join("; ") || "never accepted by a channel"}`] };
    return out;
  }
}
