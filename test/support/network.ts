import { componentContext } from "../../src/components/component.ts";
import { afterEach } from "bun:test";
import { spawn } from "node:child_process";
import type { ComponentContext, ComponentDefinition } from "../../src/components/component.ts";
import { ChannelProcessor } from "../../src/core/channel-processor.ts";
import { systemClock } from "../../src/core/clock.ts";
import type { Event } from "../../src/core/event.ts";
import { MemoryLogger } from "../../src/core/logger.ts";
import { MemoryChannel, type MemoryChannelOptions } from "../../src/core/memory-channel.ts";
import { ReplicatingChannelSelector } from "../../src/core/selectors.ts";
import type { Source } from "../../src/core/source.ts";
import { takeOpen } from "./core.ts";
import { waitBound, waitUntil } from "./helpers.ts";

export interface Rig<T> {
  source: T;
  channel: MemoryChannel;
  logger: MemoryLogger;
}

/** A source from raw properties, wired to a MemoryChannel through a ChannelProcessor. */
export function rig<T extends Source>(def: ComponentDefinition<T>, raw: Record<string, string>, channelOptions: MemoryChannelOptions = { capacity: 100000, transactionCapacity: 100000 }): Rig<T> {
  const { options: config, errors } = def.parse(raw);
  const all = [...errors, ...(def.validate?.(config) ?? [])];
  if (all.length) throw new Error(all.map((e) => `${e.key}: ${e.message}`).join("; "));
  const logger = new MemoryLogger();
  const ctx: ComponentContext = componentContext("r1", { agentName: "a1", clock: systemClock, logger });
  const source = def.create(config, ctx);
  const channel = new MemoryChannel("c1", channelOptions);
  channel.start();
  const processor = new ChannelProcessor(new ReplicatingChannelSelector([channel]));
  processor.initialize();
  source.setChannelProcessor(processor);
  return { source, channel, logger };
}

/** Takes every event now in the channel. */
export async function takeAll(channel: MemoryChannel): Promise<Event[]> {
  const out: Event[] = [];
  const max = channel.getTransactionCapacity();
  for (;;) {
    const { tx, events: batch } = takeOpen(channel, max);
    await tx.commit();
    tx.close();
    out.push(...batch);
    if (batch.length < max) return out;
  }
}

/** Takes events until `n` arrived (or throws after `ms`). */
export async function collect(channel: MemoryChannel, n: number, ms = 5000): Promise<Event[]> {
  const out: Event[] = [];
  const deadline = Date.now() + waitBound(ms);
  while (out.length < n) {
    out.push(...(await takeAll(channel)));
    if (out.length >= n) break;
    if (Date.now() > deadline) throw new Error(`expected ${n} events, got ${out.length}`);
    await new Promise((r) => setTimeout(r, 10));
  }
  return out;
}

/** Waits until cond() holds (or throws after `ms`). */
export function until(cond: () => boolean, ms = 5000, what = "condition"): Promise<void> {
  return waitUntil(cond, what, ms);
}

/** Runs util-linux `logger` with the arguments; resolves with its exit code and stderr. */
export function runLogger(args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn("logger", args, { stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stderr }));
  });
}

export const text = (e: Event) => new TextDecoder().decode(e.body);

/** Components pushed here are stopped, in the order they were pushed, after each test of the calling file. */
export function stoppedAfterEach<T extends { stop(): unknown }>(): T[] {
  const started: T[] = [];
  afterEach(async () => {
    for (const s of started.splice(0)) await s.stop();
  });
  return started;
}
