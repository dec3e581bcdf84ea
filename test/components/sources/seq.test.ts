import { componentContext, optionsOf } from "../../../src/components/component.ts";
import { drain as drainAll } from "../../support/core.ts";
import { describe, expect, test } from "bun:test";
import { ChannelProcessor } from "../../../src/core/channel-processor.ts";
import { systemClock } from "../../../src/core/clock.ts";
import { silentLogger } from "../../../src/core/logger.ts";
import { MemoryChannel } from "../../../src/core/memory-channel.ts";
import { ReplicatingChannelSelector } from "../../../src/core/selectors.ts";
import { definition as seq, SeqSource } from "../../../src/components/sources/seq.ts";

const ctx = (name: string) => (componentContext(name, { agentName: "a1", clock: systemClock, logger: silentLogger }));

/** Every event's body, in transactions as large as the channel allows. */
const drain = (channel: MemoryChannel) => drainAll(channel, channel.getTransactionCapacity());

describe("seq source", () => {
  test("bodies count up from 0 across batches and digit roll-overs, then it backs off", async () => {
    const channel = new MemoryChannel("c1", { capacity: 2000, transactionCapacity: 1000 });
    const source = new SeqSource(ctx("r1"), optionsOf(seq, { batchSize: 7, totalEvents: 1005 }));
    source.setChannelProcessor(new ChannelProcessor(new ReplicatingChannelSelector([channel])));
    source.start();
    let statuses = 0;
    while ((await source.process()) === "READY") statuses++;
    expect(statuses).toBe(143); // 143 full batches of 7, then the last 4 return BACKOFF
    expect(await source.process()).toBe("BACKOFF");
    const bodies = await drain(channel);
    expect(bodies).toEqual(Array.from({ length: 1005 }, (_, i) => String(i)));
    expect(source.counter.values.EventAcceptedCount).toBe(1005);
    expect(source.counter.values.AppendBatchAcceptedCount).toBe(144);
  });

  test("bodies stay right where batches cross thousands and the digit count grows (1 to 5 digits)", async () => {
    for (const batchSize of [1, 333, 1000]) {
      const channel = new MemoryChannel("c1", { capacity: 20000, transactionCapacity: 1000 });
      const source = new SeqSource(ctx("r1"), optionsOf(seq, { batchSize, totalEvents: 12_345 }));
      source.setChannelProcessor(new ChannelProcessor(new ReplicatingChannelSelector([channel])));
      while ((await source.process()) === "READY");
      const bodies = await drain(channel);
      expect(bodies.length).toBe(12_345);
      expect(bodies.findIndex((b, i) => b !== String(i))).toBe(-1);
    }
  });

  test("a full channel counts ChannelWriteFail and the same numbers are sent again", async () => {
    const channel = new MemoryChannel("c1", { capacity: 10, transactionCapacity: 10, keepAlive: 0 });
    const source = new SeqSource(ctx("r1"), optionsOf(seq, { batchSize: 10, totalEvents: 30 }));
    source.setChannelProcessor(new ChannelProcessor(new ReplicatingChannelSelector([channel])));
    expect(await source.process()).toBe("READY");
    expect(await source.process()).toBe("BACKOFF");
    expect(source.counter.values.ChannelWriteFail).toBe(1);
    expect(await drain(channel)).toEqual(Array.from({ length: 10 }, (_, i) => String(i)));
    expect(await source.process()).toBe("READY");
    expect(await drain(channel)).toEqual(Array.from({ length: 10 }, (_, i) => String(10 + i)));
  });
});
