/**
 * Scale-out on NATS JetStream with real processes: nats-server (single and a 3-node cluster)
 * and `flume run` agents as child processes. Events are counted where a user would: what an
 * upstream client was told OK for, and the lines the agents' file_roll sinks wrote.
 */
import { beforeAll, describe, expect } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { createEvent } from "../../src/core/event.ts";
import { AvroRpcClient } from "../../src/rpc/client.ts";
import { buildGoPeer, NATS_SERVER_CLUSTER, needsGoPeer } from "../support/go-peers.ts";
import { agentsAfterEach, fetchMetrics, freePort, sleep, tempDir, waitUntil } from "../support/helpers.ts";
import { natsClient, type NatsSetup, startCluster, startNats } from "../support/nats.ts";
import { needsNatsServer } from "../support/requires.ts";

const { cleanups, startAgent } = agentsAfterEach();
const needsCluster = needsGoPeer(NATS_SERVER_CLUSTER);

// The cluster's nats-server is built once (`.ci/run` has done it before the suite).
beforeAll(async () => {
  if (needsCluster.holds) await buildGoPeer(NATS_SERVER_CLUSTER);
}, 600_000);

/** Every line the file_roll sink wrote below dir. */
function sinkLines(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  for (const f of readdirSync(dir)) for (const line of readFileSync(path.join(dir, f), "utf8").split("\n")) if (line !== "") out.push(line);
  return out;
}

/** Lines of an agent `name`: jetstream channel c1 (stream, servers, extra lines) drained by a file_roll sink into dir. */
function collectorConf(name: string, servers: string, stream: string, dir: string, extra = ""): string {
  return `${name}.channels = c1
${name}.sinks = k1
${name}.channels.c1.type = jetstream
${name}.channels.c1.servers = ${servers}
${name}.channels.c1.stream = ${stream}
${name}.channels.c1.ack-wait = 2000
${name}.channels.c1.transactionCapacity = 100
${name}.channels.c1.reconnect-wait = 200
${extra}
${name}.sinks.k1.type = file_roll
${name}.sinks.k1.channel = c1
${name}.sinks.k1.sink.directory = ${dir}
${name}.sinks.k1.sink.rollInterval = 0
${name}.sinks.k1.sink.batchSize = 50
`;
}

/** Publishes bodies e-<from>..e-<from+n-1> on the channel's subject, as an upstream producer; resolves when all are stored. */
async function publishEvents(servers: string, stream: string, from: number, n: number): Promise<void> {
  const c = await natsClient(servers);
  try {
    for (let i = from; i < from + n; i += 100) {
      const sends: Promise<unknown>[] = [];
      for (let j = i; j < Math.min(from + n, i + 100); j++) sends.push(c.js.publish(`flume.${stream}`, new TextEncoder().encode(`e-${j}`), { msgID: `${stream}-${j}` }));
      await Promise.all(sends);
    }
  } finally {
    await c.close();
  }
}

function tally(lines: string[]): { distinct: number; duplicates: number } {
  const distinct = new Set(lines).size;
  return { distinct, duplicates: lines.length - distinct };
}

function expected(n: number): string[] {
  return Array.from({ length: n }, (_, i) => `e-${i}`);
}

describe("JetStream scale-out (nats-server and flume run child processes)", () => {
  for (const framing of ["batch", "event"]) needsCluster.test(`framing ${framing}: 3-node cluster, stream of 3 replicas: the stream leader is SIGKILLed mid-stream and restarted; every event the client got OK for is delivered, duplicates bounded`, async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    // Where the test was, printed if it did not finish (a timeout runs only the cleanups).
    const started = performance.now();
    const steps: string[] = [];
    const step = (what: string) => steps.push(`${((performance.now() - started) / 1000).toFixed(1)} s: ${what}`);
    let finished = false;
    cleanups.push(() => {
      if (!finished) console.log(`framing ${framing} did not finish; its steps:\n${steps.join("\n")}\nthe agent's log (end):\n${agent?.stderr.slice(-20000)}`);
    });
    let agent: ReturnType<typeof startAgent> | undefined;
    const cluster = await startCluster(3);
    step("cluster started");
    cleanups.push(() => void cluster.stop());
    const [avroPort, metrics] = [await freePort(), await freePort()];
    const out = path.join(tmp.dir, "out");
    agent = startAgent(
      tmp.dir,
      "a1",
      `a1.sources = r1
a1.sources.r1.type = avro
a1.sources.r1.bind = 127.0.0.1
a1.sources.r1.port = ${avroPort}
a1.sources.r1.channels = c1
${collectorConf("a1", cluster.servers, "R3", out, `a1.channels.c1.replicas = 3\na1.channels.c1.commit-timeout = 20000\na1.channels.c1.framing = ${framing}`)}`,
      metrics,
    );
    await agent.waitFor(/jetstream channel c1: connected to NATS/, 15000);
    step("agent connected");
    const client = { c: await AvroRpcClient.connect({ host: "127.0.0.1", port: avroPort, requestTimeout: 30000 }) };
    cleanups.push(() => client.c.close());

    const batches = 60;
    const batchSize = 50;
    let acknowledged = 0;
    let resentEvents = 0;
    let killed: NatsSetup["nodes"][number] | null = null;
    for (let b = 0; b < batches; b++) {
      const batch = Array.from({ length: batchSize }, (_, i) => createEvent(`e-${b * batchSize + i}`));
      if (b === batches / 3) {
        step("looking up the stream leader");
        const c = await natsClient(cluster.servers);
        const leader = (await c.jsm.streams.info("R3")).cluster?.leader;
        await c.close();
        killed = cluster.nodes.find((n) => n.name === leader) ?? cluster.nodes[0];
        step(`killing ${killed.name} (stream leader ${leader})`);
        await killed.kill("SIGKILL");
        step("killed");
      }
      if (b === batches / 2 && killed) {
        step(`restarting ${killed.name}`);
        await killed.restart();
        step("restarted");
      }
      for (let attempt = 0; ; attempt++) {
        try {
          await client.c.appendBatch(batch);
          acknowledged += batch.length;
          break;
        } catch (err) {
          step(`batch ${b} attempt ${attempt}: ${(err as Error).message}`);
          // FAILED or a broken connection: as Flume's client, send the same batch again.
          expect(`${attempt}: ${(err as Error).message}`).not.toStartWith("20:");
          resentEvents += batch.length;
          await sleep(200);
          if (!client.c.isActive()) client.c = await AvroRpcClient.connect({ host: "127.0.0.1", port: avroPort, requestTimeout: 30000 });
        }
      }
    }
    expect(acknowledged).toBe(batches * batchSize);
    step("every batch acknowledged");
    try {
      await waitUntil(() => tally(sinkLines(out)).distinct >= acknowledged, "every acknowledged event in the sink's file", 20000, 100);
    } catch (err) {
      const have = new Set(sinkLines(out));
      const missing = expected(acknowledged).filter((e) => !have.has(e));
      const m = await fetchMetrics(metrics).catch(() => ({}) as Record<string, Record<string, string>>);
      step(`${missing.length} missing (${missing.slice(0, 5).join(", ")}...); channel ${JSON.stringify(m["CHANNEL.c1"])}; sink ${JSON.stringify(m["SINK.k1"])}`);
      throw err;
    }
    step("every event in the sink's file");
    // Redeliveries of takes whose acks were lost arrive within ack-wait: let them land before counting.
    await sleep(2100);
    const lines = sinkLines(out);
    const { distinct, duplicates } = tally(lines);
    expect(new Set(lines)).toEqual(new Set(expected(acknowledged)));
    expect(distinct).toBe(acknowledged);
    // A duplicate comes from a batch the client sent again after a commit that had in fact
    // succeeded, or from takes whose acks the killed node lost (at most one prefetch, 100, plus a sink batch).
    const channel = (await fetchMetrics(metrics))["CHANNEL.c1"];
    console.log(`cluster, framing ${framing}: ${acknowledged} acknowledged, ${resentEvents} resent, ${duplicates} duplicates, ${channel["channel.jetstream.publish.retry.count"]} publish retries`);
    expect(duplicates).toBeLessThanOrEqual(resentEvents + 100 + 50);
    // The commits in flight while the leader was gone were retried with their message ids.
    expect(Number(channel["channel.jetstream.publish.retry.count"])).toBeGreaterThan(0);
    finished = true;
  }, 120_000);

  needsNatsServer.test("two agents on one jetstream channel are competing consumers: each event is delivered once across both", async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const nats = await startNats();
    cleanups.push(() => void nats.stop());
    const outs = [path.join(tmp.dir, "a"), path.join(tmp.dir, "b")];
    const agents = ["a1", "a2"].map(async (name, i) => {
      const a = startAgent(tmp.dir, name, collectorConf(name, nats.servers, "SHARED", outs[i]), await freePort());
      await a.waitFor(/jetstream channel c1: connected to NATS/, 10000);
      return a;
    });
    await Promise.all(agents);
    const total = 3000;
    await publishEvents(nats.servers, "SHARED", 0, total);
    await waitUntil(() => sinkLines(outs[0]).length + sinkLines(outs[1]).length >= total, "all events in the sinks", 15000, 50);
    await sleep(500);
    const [a, b] = outs.map(sinkLines);
    expect(a.length).toBeGreaterThan(0);
    expect(b.length).toBeGreaterThan(0);
    expect(a.length + b.length).toBe(total);
    expect(new Set([...a, ...b])).toEqual(new Set(expected(total)));
  }, 90_000);

  needsNatsServer.test("one of two agents is SIGKILLed mid-batch: the other delivers what it held; none lost, duplicates bounded by its prefetch", async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const nats = await startNats();
    cleanups.push(() => void nats.stop());
    const outs = [path.join(tmp.dir, "a"), path.join(tmp.dir, "b")];
    // The victim's sink is slow, so it is always mid-batch with events prefetched.
    const slow = "a2.channels.c1.prefetch = 100";
    const survivor = startAgent(tmp.dir, "a1", collectorConf("a1", nats.servers, "KILL", outs[0]), await freePort());
    const victim = startAgent(tmp.dir, "a2", collectorConf("a2", nats.servers, "KILL", outs[1], slow), await freePort());
    await Promise.all([survivor.waitFor(/jetstream channel c1: connected/, 10000), victim.waitFor(/jetstream channel c1: connected/, 10000)]);
    const total = 4000;
    const publishing = publishEvents(nats.servers, "KILL", 0, total);
    await waitUntil(() => sinkLines(outs[1]).length > 200, "the victim delivering", 10000, 10);
    victim.child.kill("SIGKILL");
    await victim.exited();
    await publishing;
    await waitUntil(() => tally([...sinkLines(outs[0]), ...sinkLines(outs[1])]).distinct >= total, "every event delivered", 15000, 50);
    await sleep(300);
    const all = [...sinkLines(outs[0]), ...sinkLines(outs[1])];
    expect(new Set(all)).toEqual(new Set(expected(total)));
    const { duplicates } = tally(all);
    console.log(`agent kill: ${duplicates} duplicates`);
    // Only what the victim wrote and never acked comes again: at most one sink batch (50).
    expect(duplicates).toBeLessThanOrEqual(50);
  }, 90_000);

  needsNatsServer.test("an agent stopped (SIGTERM) mid-stream and started again: nothing lost, nothing duplicated", async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const nats = await startNats();
    cleanups.push(() => void nats.stop());
    const out = path.join(tmp.dir, "out");
    const conf = collectorConf("a1", nats.servers, "RESTART", out);
    const first = startAgent(tmp.dir, "a1", conf, await freePort());
    await first.waitFor(/jetstream channel c1: connected/, 10000);
    const total = 3000;
    const publishing = publishEvents(nats.servers, "RESTART", 0, total);
    await waitUntil(() => sinkLines(out).length > 500, "delivery under way", 10000, 10);
    first.child.kill("SIGTERM");
    expect(await first.exited()).toBe(0);
    await publishing;
    const second = startAgent(tmp.dir, "a1", conf, await freePort());
    await second.waitFor(/jetstream channel c1: connected/, 10000);
    await waitUntil(() => sinkLines(out).length >= total, "every event delivered", 15000, 50);
    await sleep(300);
    const lines = sinkLines(out);
    expect(new Set(lines)).toEqual(new Set(expected(total)));
    expect(lines.length).toBe(total);
  }, 90_000);

  needsNatsServer.test("a server that is down when the agent starts: the agent logs, keeps running, and events flow once the server is up", async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const port = await freePort();
    const out = path.join(tmp.dir, "out");
    const agent = startAgent(
      tmp.dir,
      "a1",
      `a1.sources = r1
a1.sources.r1.type = seq
a1.sources.r1.totalEvents = 200
a1.sources.r1.batchSize = 50
a1.sources.r1.channels = c1
${collectorConf("a1", `nats://127.0.0.1:${port}`, "LATE", out)}`,
      await freePort(),
    );
    await agent.waitFor(/jetstream channel c1: cannot use NATS at nats:\/\/127\.0\.0\.1:\d+: .*retrying every 200 ms/, 10000);
    await agent.waitFor(/agent a1 started/, 10000);
    await sleep(500);
    expect(agent.child.exitCode).toBeNull();
    const nats = await startNats({ port });
    cleanups.push(() => void nats.stop());
    await agent.waitFor(/jetstream channel c1: connected to NATS at 127\.0\.0\.1:\d+ after \d+ attempts/, 10000);
    await waitUntil(() => new Set(sinkLines(out)).size >= 200, "200 events in the sink", 15000, 50);
    expect(new Set(sinkLines(out))).toEqual(new Set(Array.from({ length: 200 }, (_, i) => String(i))));
  }, 90_000);
});
