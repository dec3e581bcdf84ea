import type { Clock, TimerHandle } from "../core/clock.ts";
import type { Agent } from "./agent.ts";

/**
 * A one-line report of the agent's throughput: events in per second per source, events out
 * per second per channel (taken by sinks), with one decimal and the totals so far, and each
 * channel's fill.
 */
export class StatsReporter {
  private timer: TimerHandle | null = null;
  /** Keyed by counter group: a component a reload replaced starts from zero, not from its predecessor's count. */
  private last = new Map<object, number>();
  private lastAt = 0;

  constructor(
    private readonly agent: Agent,
    private readonly clock: Clock,
    private readonly write: (line: string) => void,
    private readonly intervalMs = 10000,
  ) {}

  start(): void {
    this.lastAt = this.clock.now();
    this.last = this.snapshot();
    this.schedule();
  }

  stop(): void {
    if (this.timer) this.clock.clearTimeout(this.timer);
    this.timer = null;
  }

  private schedule(): void {
    this.timer = this.clock.setTimeout(() => {
      this.write(this.line());
      this.schedule();
    }, this.intervalMs);
  }

  private snapshot(): Map<object, number> {
    const now = new Map<object, number>();
    const { sources, channels } = this.agent.components;
    for (const s of sources.values()) now.set(s.source.counter, s.source.counter.values.EventAcceptedCount);
    for (const c of channels.values()) now.set(c.channel.counter, c.channel.counter.values.EventTakeSuccessCount);
    return now;
  }

  /** The report line for the time since the previous one. */
  line(): string {
    const now = this.snapshot();
    const at = this.clock.now();
    const secs = Math.max(0.001, (at - this.lastAt) / 1000);
    const rate = (key: object) => (Math.max(0, (now.get(key) ?? 0) - (this.last.get(key) ?? 0)) / secs).toFixed(1);
    const total = (key: object) => thousands(now.get(key) ?? 0);
    const parts: string[] = [];
    const { sources, channels } = this.agent.components;
    for (const s of sources.values()) parts.push(`${s.name} in ${rate(s.source.counter)}/s (${total(s.source.counter)} total)`);
    for (const c of channels.values()) {
      const v = c.channel.counter.values;
      parts.push(`${c.name} out ${rate(c.channel.counter)}/s (${total(c.channel.counter)} total) fill ${c.channel.counter.fillPercentage().toFixed(1)}% (${v.ChannelSize}/${v.ChannelCapacity})`);
    }
    this.last = now;
    this.lastAt = at;
    return `stats: ${parts.join(" | ")}`;
  }
}

/**
 * An integer with commas between thousands ("1,234,567"), as toLocaleString("en-US") writes it
 * without loading ICU: that costs an idle agent about 2 MB of RSS at its first stats line.
 */
export function thousands(n: number): string {
  const digits = String(Math.trunc(Math.abs(n)));
  let out = "";
  for (let end = digits.length; end > 0; end -= 3) out = (end > 3 ? "," : "") + digits.slice(Math.max(0, end - 3), end) + out;
  return n < 0 ? `-${out}` : out;
}
