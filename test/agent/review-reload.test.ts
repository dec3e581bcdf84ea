import { describe, expect, test } from "bun:test";
import net from "node:net";
import { Agent } from "../../src/agent/agent.ts";
import { parseAgentConfig } from "../support/agent.ts";
import { listenLocal } from "../support/helpers.ts";

const parse = (text: string) => parseAgentConfig(text, "reload.conf");

// Sources and sinks list their channels in another order than a1.channels does.
const CONF = `a1.sources = r1 r2
a1.channels = c1 c2
a1.sinks = k1 k2
a1.sources.r1.type = seq
a1.sources.r1.totalEvents = 10
a1.sources.r1.channels = c2
a1.sources.r2.type = seq
a1.sources.r2.totalEvents = 10
a1.sources.r2.channels = c1
a1.channels.c1.type = memory
a1.channels.c2.type = memory
a1.sinks.k1.type = null
a1.sinks.k1.channel = c2
a1.sinks.k2.type = null
a1.sinks.k2.channel = c1
`;

describe("reload keeps what did not change", () => {
  test("an unchanged source or sink keeps running whatever order its channels are declared in", async () => {
    const agent = new Agent("a1", { drainTimeout: 200 });
    await agent.start(parse(CONF));
    const r1 = agent.components.sources.get("r1")!.source;
    const r = await agent.reload(parse(`${CONF}a1.channels.c1.capacity = 200\n`));
    await agent.stop();
    expect(r.started).toEqual([]);
    expect(r.stopped).toEqual([]);
    expect(agent.components.sources.get("r1")!.source).toBe(r1);
    expect(r.kept.sort()).toEqual(["channel c1", "channel c2", "sink runner k1", "sink runner k2", "source r1", "source r2"]);
  });
});

describe("reload report", () => {
  test("a new source whose port is taken is reported as not started (and retried), not as started", async () => {
    const blocker = net.createServer();
    const taken = await listenLocal(blocker);
    const agent = new Agent("a1", { drainTimeout: 200 });
    try {
      await agent.start(parse(CONF));
      const r = await agent.reload(
        parse(`${CONF.replace("a1.sources = r1 r2", "a1.sources = r1 r2 r3")}a1.sources.r3.type = netcat
a1.sources.r3.bind = 127.0.0.1
a1.sources.r3.port = ${taken}
a1.sources.r3.channels = c1
`),
      );
      expect(r.started).toHaveLength(1);
      expect(r.started[0]).toMatch(/^source r3 \(not started, retrying: .*EADDRINUSE/);
    } finally {
      await agent.stop();
      blocker.close();
    }
  });
});
