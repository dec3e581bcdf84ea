import { componentContext } from "../../src/components/component.ts";
import { ChannelProcessor } from "../../src/core/channel-processor.ts";
import type { Channel } from "../../src/core/channel.ts";
import { systemClock } from "../../src/core/clock.ts";
import type { Event } from "../../src/core/event.ts";
import { MemoryLogger } from "../../src/core/logger.ts";
import { MemoryChannel } from "../../src/core/memory-channel.ts";
import type { MemoryChannelOptions } from "../../src/core/memory-channel.ts";
import { ReplicatingChannelSelector } from "../../src/core/selectors.ts";
import type { AnySource } from "../../src/core/source.ts";
import type { ComponentContext, ComponentDefinition } from "../../src/components/component.ts";
import { waitUntil } from "./helpers.ts";

export function context(name: string, logger = new MemoryLogger()): ComponentContext & { logger: MemoryLogger } {
  return { ...componentContext(name, { agentName: "a1", clock: systemClock }), logger };
}

/** Builds a component the way the agent does: raw properties through its schema. */
export function build<T>(def: ComponentDefinition<T>, raw: Record<string, string>, ctx: ComponentContext): T {
  const { options: config, errors } = def.parse(raw);
  if (errors.length > 0) throw new Error(errors.map((e) => `${e.key}: ${e.message}`).join("; "));
  return def.create(config, ctx);
}

/** A source wired to one memory channel. */
export function wire(source: AnySource, options: MemoryChannelOptions = { capacity: 100000, transactionCapacity: 10000 }): MemoryChannel {
  const channel = new MemoryChannel("c1", options);
  channel.start();
  source.setChannelProcessor(new ChannelProcessor(new ReplicatingChannelSelector([channel as Channel])));
  return channel;
}

/** Records the body bytes of every batch the source hands to its channel processor. */
export function recordBatchBytes(source: AnySource): number[] {
  const batchBytes: number[] = [];
  const processor = source.getChannelProcessor();
  const original = processor.processEventBatch.bind(processor);
  processor.processEventBatch = (events, position) => {
    batchBytes.push(events.reduce((n, e) => n + e.body.length, 0));
    return original(events, position);
  };
  return batchBytes;
}

/** Takes everything the channel holds, committing. */
export async function drain(channel: MemoryChannel, max = Number.MAX_SAFE_INTEGER, perTx = 1000): Promise<Event[]> {
  const out: Event[] = [];
  while (out.length < max) {
    const tx = channel.getTransaction();
    tx.begin();
    let n = 0;
    for (; n < perTx && out.length < max; n++) {
      const e = tx.take();
      if (e === null) break;
      out.push(e);
    }
    await tx.commit();
    tx.close();
    if (n === 0) break;
  }
  return out;
}

const decoder = new TextDecoder();
export function bodies(events: Event[]): string[] {
  return events.map((e) => decoder.decode(e.body));
}

/** Polls until cond() is true; fails with `what` after ms. */
export const until = waitUntil;

/** Lines "prefix-0" .. "prefix-(n-1)" joined with newlines, with a final newline. */
export function numbered(prefix: string, from: number, to: number): string {
  let s = "";
  for (let i = from; i < to; i++) s += `${prefix}-${i}\n`;
  return s;
}
