import { describe, expect, test } from "bun:test";
import { createEvent } from "../../src/core/event.ts";
import { AvroRpcClient } from "../../src/rpc/client.ts";
import { agentsAfterEach, freePort, tempDir, waitForMetrics } from "../support/helpers.ts";
import { rpcSinkLines, twoAgentsOverRpc } from "../support/rpc.ts";

const { cleanups, startAgent: agent } = agentsAfterEach();

const waitForMetric = (port: number, group: string, key: string, value: string, ms = 15000) =>
  waitForMetrics(port, `${group}.${key} to reach ${value}`, (m) => m[group]?.[key] === value, ms, 50);

describe("two agents over RPC (flume run child processes)", () => {
  // One harness for both RPC protocols: what differs is the type and thrift's protocol setting.
  const pairs = [
    { name: "Avro RPC", type: "avro" },
    { name: "thrift, compact protocol", type: "thrift", both: { protocol: "compact" } },
    { name: "thrift, binary protocol", type: "thrift", both: { protocol: "binary" } },
  ];
  for (const p of pairs) {
    test(`agent A (seq -> memory -> ${p.type} sink) to agent B (${p.type} source -> memory -> null), ${p.name}: every event arrives over one connection`, async () => {
      const tmp = tempDir();
      cleanups.push(tmp.cleanup);
      const total = 3000;
      const { a, b, ma, mb } = await twoAgentsOverRpc(agent, tmp.dir, { ...p, total });
      // The sink wakes as soon as events are committed, so a batch may hold fewer than batch-size.
      expect(Number(mb["SOURCE.r1"].AppendBatchAcceptedCount)).toBeGreaterThanOrEqual(total / 1000);
      expect(mb["SOURCE.r1"].AppendBatchAcceptedCount).toBe(mb["SOURCE.r1"].AppendBatchReceivedCount);
      expect(mb["SOURCE.r1"].OpenConnectionCount).toBe("1");
      expect(ma["SINK.k1"]).toMatchObject({ ConnectionCreatedCount: "1", EventWriteFail: "0" });
      a.child.kill("SIGTERM");
      b.child.kill("SIGTERM");
      expect(await a.exited()).toBe(0);
      expect(await b.exited()).toBe(0);
    });
  }

  test("failover across two downstream agents, the preferred one stopped mid-stream: nothing lost, duplicates reported", async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const [portA, portB1, portB2, mA, mB1, mB2] = await Promise.all([freePort(), freePort(), freePort(), freePort(), freePort(), freePort()]);
    const downstream = (name: string, port: number) => `${name}.sources = r1
${name}.channels = c1
${name}.sinks = k1
${name}.sources.r1.type = avro
${name}.sources.r1.bind = 127.0.0.1
${name}.sources.r1.port = ${port}
${name}.sources.r1.channels = c1
${name}.channels.c1.type = memory
${name}.channels.c1.capacity = 100000
${name}.channels.c1.transactionCapacity = 1000
${name}.sinks.k1.type = logger
${name}.sinks.k1.channel = c1
`;
    const b1 = agent(tmp.dir, "b1", downstream("b1", portB1), mB1);
    const b2 = agent(tmp.dir, "b2", downstream("b2", portB2), mB2);
    await Promise.all([b1.waitFor(/agent b1 started/), b2.waitFor(/agent b2 started/)]);
    const a = agent(
      tmp.dir,
      "a",
      `a.sources = r1
a.channels = c1
a.sinks = k1 k2
a.sinkgroups = g1
a.sinkgroups.g1.sinks = k1 k2
a.sinkgroups.g1.processor.type = failover
a.sinkgroups.g1.processor.priority.k1 = 10
a.sinkgroups.g1.processor.priority.k2 = 5
a.sources.r1.type = avro
a.sources.r1.bind = 127.0.0.1
a.sources.r1.port = ${portA}
a.sources.r1.channels = c1
a.channels.c1.type = memory
a.channels.c1.capacity = 100000
a.channels.c1.transactionCapacity = 1000
${rpcSinkLines("k1", portB1, 50)}${rpcSinkLines("k2", portB2, 50)}`,
      mA,
    );
    await a.waitFor(/agent a started/);
    const client = await AvroRpcClient.connect({ host: "127.0.0.1", port: portA });
    const total = 2000;
    for (let i = 0; i < total; i += 100) {
      if (i === 600) {
        // Mid-stream: the preferred downstream agent goes away.
        await waitForMetric(mB1, "SOURCE.r1", "EventAcceptedCount", "600");
        b1.child.kill("SIGTERM");
        expect(await b1.exited()).toBe(0);
      }
      await client.appendBatch(Array.from({ length: 100 }, (_, j) => createEvent(`ev-${i + j}`)));
    }
    client.close();
    await waitForMetric(mA, "CHANNEL.c1", "ChannelSize", "0");
    await waitForMetric(mB2, "CHANNEL.c1", "ChannelSize", "0");
    const seen = (out: string) => [...out.matchAll(/body: ((?:[0-9A-F]{2} )+)/g)].map((m) => Buffer.from(m[1].replace(/ /g, ""), "hex").toString());
    const atB1 = seen(b1.stdout + b1.stderr);
    let atB2 = seen(b2.stdout + b2.stderr);
    // The last lines may still be in the pipe from b2.
    for (let tries = 0; tries < 100 && new Set([...atB1, ...atB2]).size < total; tries++) {
      await new Promise((r) => setTimeout(r, 20));
      atB2 = seen(b2.stdout + b2.stderr);
    }
    const unique = new Set([...atB1, ...atB2]);
    const duplicates = atB1.length + atB2.length - unique.size;
    console.log(`failover: ${atB1.length} events logged by b1, ${atB2.length} by b2, ${unique.size} unique of ${total}, ${duplicates} duplicates`);
    expect(unique.size).toBe(total);
    expect(atB1.length).toBeGreaterThanOrEqual(600);
    expect(atB2.length).toBeGreaterThan(0);
  });
});
