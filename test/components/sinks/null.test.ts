import { componentContext } from "../../../src/components/component.ts";
import { describe, expect, test } from "bun:test";
import { systemClock } from "../../../src/core/clock.ts";
import { createEvent } from "../../../src/core/event.ts";
import { silentLogger } from "../../../src/core/logger.ts";
import { MemoryChannel } from "../../../src/core/memory-channel.ts";
import { NullSink } from "../../../src/components/sinks/null.ts";

const ctx = (name: string) => (componentContext(name, { agentName: "a1", clock: systemClock, logger: silentLogger }));

describe("null sink", () => {
  test("takes batches and discards them; an empty channel means BACKOFF", async () => {
    const channel = new MemoryChannel("c1", { capacity: 100, transactionCapacity: 20 });
    const tx = channel.getTransaction();
    tx.begin();
    for (let i = 0; i < 15; i++) tx.put(createEvent(String(i)));
    await tx.commit();
    tx.close();
    const sink = new NullSink(ctx("k1"), 10);
    sink.setChannel(channel);
    expect(await sink.process()).toBe("READY");
    expect(await sink.process()).toBe("BACKOFF");
    expect(sink.eventCount).toBe(15);
    expect(channel.counter.values.EventTakeAttemptCount).toBe(16);
    expect(channel.size).toBe(0);
  });
});
