import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { Agent } from "../../src/agent/agent.ts";
import type { ComponentContext, ComponentDefinition } from "../../src/components/component.ts";
import * as registry from "../../src/components/registry.ts";
import { BaseSource } from "../../src/components/sources/base.ts";
import { createEvent } from "../../src/core/event.ts";
import { tempDir } from "../support/helpers.ts";
import { parseAgentConfig, seqConf } from "../support/agent.ts";

const parse = (text: string) => parseAgentConfig(text, "review2.conf");

/** A source that hands its buffered batch to the channel when it stops (as a tailer flushes). */
class FlushOnStopSource extends BaseSource {
  readonly kind = "event-driven";
  static flushErrors: string[] = [];
  constructor(
    ctx: ComponentContext,
    private readonly batchSize: number,
  ) {
    super(ctx);
  }
  start(): void {
    this.state = "START";
  }
  async stop(): Promise<void> {
    const batch = Array.from({ length: this.batchSize }, (_, i) => createEvent(`last ${i}`));
    try {
      await this.getChannelProcessor().processEventBatch(batch);
    } catch (err) {
      FlushOnStopSource.flushErrors.push((err as Error).message);
    }
    this.state = "STOP";
  }
}

const flushSource: ComponentDefinition<FlushOnStopSource> = {
  schema: {
    kind: "source",
    type: "review2-flush-on-stop",
    doc: "Test source: writes one batch when it stops.",
    props: [{ key: "batchSize", type: "int", default: 1, min: 1, doc: "Events written at stop" }],
  },
  create: (config, ctx) => new FlushOnStopSource(ctx, config.int("batchSize")),
};
registry.registerComponent(flushSource as ComponentDefinition<unknown>);

const BASE = seqConf(0, { channel: `a1.channels.c1.type = memory
a1.channels.c1.capacity = 100
a1.channels.c1.transactionCapacity = 100` });

describe("reload resizing a memory channel", () => {
  test("a reload that fails to build a later component leaves the channel's capacity as it was", async () => {
    const agent = new Agent("a1", { drainTimeout: 200 });
    await agent.start(parse(BASE));
    const c1 = agent.components.channels.get("c1")!.channel;
    expect(c1.counter.values.ChannelCapacity).toBe(100);
    // r2's certificate is there when the file is validated, gone when the reload builds it:
    // its create() throws after c1 was handled.
    const { dir, cleanup } = tempDir();
    writeFileSync(path.join(dir, "cert.pem"), "not checked before create");
    writeFileSync(path.join(dir, "key.pem"), "not checked before create");
    const broken = `${BASE.replace("a1.sources = r1", "a1.sources = r1 r2").replace("capacity = 100\n", "capacity = 200\n")}a1.sources.r2.type = http
a1.sources.r2.bind = 127.0.0.1
a1.sources.r2.port = 0
a1.sources.r2.ssl = true
a1.sources.r2.ssl-certificate = ${path.join(dir, "cert.pem")}
a1.sources.r2.ssl-key = ${path.join(dir, "key.pem")}
a1.sources.r2.channels = c1
`;
    const brokenConfig = parse(broken);
    cleanup();
    await expect(agent.reload(brokenConfig)).rejects.toThrow(/cert\.pem/);
    // The old configuration keeps running, with its channel as configured.
    expect(c1.counter.values.ChannelCapacity).toBe(100);
    // A later good reload still applies the resize (the failed one did not mark it as done).
    await agent.reload(parse(BASE.replace("capacity = 100\n", "capacity = 200\n")));
    expect(agent.components.channels.get("c1")!.channel).toBe(c1);
    expect(c1.counter.values.ChannelCapacity).toBe(200);
    await agent.stop();
  });

  test("a smaller transactionCapacity applies only after the old source (with its bigger batch) stopped", async () => {
    FlushOnStopSource.flushErrors = [];
    const conf = (batch: number, tc: number) => `a1.sources = r1
a1.channels = c1
a1.sources.r1.type = review2-flush-on-stop
a1.sources.r1.batchSize = ${batch}
a1.sources.r1.channels = c1
a1.channels.c1.type = memory
a1.channels.c1.capacity = 100
a1.channels.c1.transactionCapacity = ${tc}
`;
    const agent = new Agent("a1", { drainTimeout: 200 });
    await agent.start(parse(conf(50, 100)));
    const c1 = agent.components.channels.get("c1")!.channel;
    // The operator lowers both the batch and the transaction capacity.
    await agent.reload(parse(conf(10, 10)));
    expect(agent.components.channels.get("c1")!.channel).toBe(c1);
    // The old source's last batch of 50 went in under the old transactionCapacity.
    expect(FlushOnStopSource.flushErrors).toEqual([]);
    expect(c1.counter.values.ChannelSize).toBe(50);
    await agent.stop();
    // The new source's batch of 10 fits the new transactionCapacity too.
    expect(FlushOnStopSource.flushErrors).toEqual([]);
  });
});
