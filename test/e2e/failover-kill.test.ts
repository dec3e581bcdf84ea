/**
 * End-to-end failover with a crash: agent A (seq -> memory -> failover group of
 * two avro sinks) feeds downstream agents B1 (preferred) and B2 (avro source -> durable file
 * channel -> file_roll). B1 is killed with SIGKILL while batches are in flight, A fails over to
 * B2, then B1 restarts on the same file channel directories, is killed again while its
 * file_roll drains the replayed backlog, and restarts once more to deliver the rest of what it
 * had acknowledged. Every sequence number must reach the union of both outputs; duplicates
 * (at-least-once) are counted, reported and must stay within a few batches.
 */
import { describe, expect, test } from "bun:test";
import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { agentsAfterEach, freePort, type Metrics, sleep, tempDir, waitBound, waitForMetrics } from "../support/helpers.ts";
import { rpcSinkLines } from "../support/rpc.ts";

const { cleanups, startAgent } = agentsAfterEach();

function num(m: Metrics, group: string, key: string): number {
  return Number(m[group]?.[key] ?? Number.NaN);
}

/**
 * The event bodies file_roll wrote into dir, one per line. A SIGKILL may cut the last write of a
 * file short: an unterminated tail was never committed, so it is skipped (and counted).
 */
function readOutput(dir: string): { bodies: string[]; torn: number; files: string[] } {
  const bodies: string[] = [];
  let torn = 0;
  const files = readdirSync(dir).sort();
  for (const f of files) {
    const text = readFileSync(path.join(dir, f), "utf8");
    const lines = text.split("\n");
    const tail = lines.pop() as string;
    if (tail !== "") torn++;
    for (const l of lines) bodies.push(l);
  }
  return { bodies, torn, files };
}

describe("failover group across two downstream agents, the preferred one killed mid-stream", () => {
  test("SIGKILL of B1 while batches are in flight, again while it drains its replayed file channel: nothing lost, duplicates bounded and reported", async () => {
    const tmp = tempDir("flume-failover-kill-");
    cleanups.push(tmp.cleanup);
    const total = 20000;
    const batch = 100;
    const [portB1, portB2, mA, mB1, mB2] = await Promise.all([freePort(), freePort(), freePort(), freePort(), freePort()]);

    const downstream = (name: string, port: number) => {
      const base = path.join(tmp.dir, name);
      for (const d of ["checkpoint", "data", "out"]) mkdirSync(path.join(base, d), { recursive: true });
      // file_roll takes smaller batches than the source puts, so B1 holds a backlog in its
      // durable channel when it dies: the restart has acknowledged events to deliver.
      return `${name}.sources = r1
${name}.channels = c1
${name}.sinks = k1
${name}.sources.r1.type = avro
${name}.sources.r1.bind = 127.0.0.1
${name}.sources.r1.port = ${port}
${name}.sources.r1.channels = c1
${name}.channels.c1.type = file
${name}.channels.c1.checkpointDir = ${path.join(base, "checkpoint")}
${name}.channels.c1.dataDirs = ${path.join(base, "data")}
${name}.channels.c1.capacity = 100000
${name}.channels.c1.transactionCapacity = 1000
${name}.channels.c1.minimumRequiredSpace = 1048576
${name}.sinks.k1.type = file_roll
${name}.sinks.k1.channel = c1
${name}.sinks.k1.sink.directory = ${path.join(base, "out")}
${name}.sinks.k1.sink.rollInterval = 0
${name}.sinks.k1.sink.batchSize = 20
`;
    };
    const confB1 = downstream("b1", portB1);
    const confB2 = downstream("b2", portB2);
    const outB1 = path.join(tmp.dir, "b1", "out");
    const outB2 = path.join(tmp.dir, "b2", "out");

    let b1 = startAgent(tmp.dir, "b1", confB1, mB1);
    const b2 = startAgent(tmp.dir, "b2", confB2, mB2);
    await Promise.all([b1.waitFor(/agent b1 started/), b2.waitFor(/agent b2 started/)]);

    const a = startAgent(
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
a.sinkgroups.g1.processor.maxpenalty = 2000
a.sources.r1.type = seq
a.sources.r1.totalEvents = ${total}
a.sources.r1.batchSize = ${batch}
a.sources.r1.channels = c1
a.channels.c1.type = memory
a.channels.c1.capacity = 100000
a.channels.c1.transactionCapacity = 1000
${rpcSinkLines("k1", portB1, batch)}${rpcSinkLines("k2", portB2, batch)}`,
      mA,
    );

    // Mid-stream: B1 has acknowledged a few thousand events and more are coming (the whole
    // stream takes a fraction of a second, hence the tight polling).
    // With a backlog in its channel, whatever the machine's speed (on a loaded one the sink may keep up for a while).
    const beforeKill = await waitForMetrics(mB1, "b1 to accept 3000 events and hold a backlog", (m) => num(m, "SOURCE.r1", "EventAcceptedCount") >= 3000 && num(m, "CHANNEL.c1", "ChannelSize") >= 200, 15000, 2);
    b1.child.kill("SIGKILL");
    await b1.exited();
    expect(b1.child.signalCode).toBe("SIGKILL");
    const acceptedByB1 = num(beforeKill, "SOURCE.r1", "EventAcceptedCount");
    const backlogAtB1 = num(beforeKill, "CHANNEL.c1", "ChannelSize");
    // The kill really landed mid-stream: A still had events to send.
    expect(acceptedByB1).toBeLessThan(total);

    // A fails over: B2 takes the rest of the stream while B1 is down.
    await waitForMetrics(mB2, "b2 to accept events after the failover", (m) => num(m, "SOURCE.r1", "EventAcceptedCount") > 0);

    // B1 comes back on the same directories: its file channel replays what it acknowledged.
    b1 = startAgent(tmp.dir, "b1", confB1, mB1);
    await b1.waitFor(/agent b1 started/);

    // Killed again while its file_roll drains that backlog: taken, maybe written, not committed.
    // Halfway through the replayed backlog (up to 1000 events), so that some is left at the kill.
    const replayedBy = (m: Metrics) => num(m, "SINK.k1", "EventDrainSuccessCount") + num(m, "CHANNEL.c1", "ChannelSize");
    const atRestart = await waitForMetrics(mB1, "restarted b1 to report its replayed channel", (m) => "CHANNEL.c1" in m, 15000, 2);
    const target = Math.min(1000, Math.floor(replayedBy(atRestart) / 2));
    const midDrain = await waitForMetrics(mB1, `restarted b1 to drain ${target} events`, (m) => num(m, "SINK.k1", "EventDrainSuccessCount") >= target, 15000, 2);
    b1.child.kill("SIGKILL");
    await b1.exited();
    expect(b1.child.signalCode).toBe("SIGKILL");
    const drainedBeforeSecondKill = num(midDrain, "SINK.k1", "EventDrainSuccessCount");
    const leftAtSecondKill = num(midDrain, "CHANNEL.c1", "ChannelSize");
    expect(leftAtSecondKill).toBeGreaterThan(0);

    b1 = startAgent(tmp.dir, "b1", confB1, mB1);
    await b1.waitFor(/agent b1 started/);

    const expected = new Set(Array.from({ length: total }, (_, i) => String(i)));
    const start = Date.now();
    let union = new Set<string>();
    let r1 = readOutput(outB1);
    let r2 = readOutput(outB2);
    while (Date.now() - start < waitBound(15000)) {
      r1 = readOutput(outB1);
      r2 = readOutput(outB2);
      union = new Set([...r1.bodies, ...r2.bodies]);
      if (union.size >= total) break;
      await sleep(50);
    }
    const missing = [...expected].filter((s) => !union.has(s));
    expect({ missing: missing.length, firstMissing: missing.slice(0, 10) }).toEqual({ missing: 0, firstMissing: [] });
    // Every line is one of the generated events: nothing garbled by the crash.
    expect([...union].filter((s) => !expected.has(s))).toEqual([]);

    // Quiesce: A and both downstream channels empty, so counts below are final.
    const ma = await waitForMetrics(mA, "a to drain its channel", (m) => num(m, "CHANNEL.c1", "ChannelSize") === 0 && num(m, "SOURCE.r1", "EventAcceptedCount") === total);
    const mb1 = await waitForMetrics(mB1, "restarted b1 to drain its channel", (m) => num(m, "CHANNEL.c1", "ChannelSize") === 0);
    await waitForMetrics(mB2, "b2 to drain its channel", (m) => num(m, "CHANNEL.c1", "ChannelSize") === 0);
    r1 = readOutput(outB1);
    r2 = readOutput(outB2);
    const delivered = r1.bodies.length + r2.bodies.length;
    const duplicates = delivered - total;
    // Within B1: replays of batches its file_roll had written but not committed; across B1 and B2:
    // A's batch in flight at the kill, committed by B1 but resent to B2 for want of an answer.
    const uniqueB1 = new Set(r1.bodies);
    const withinB1 = r1.bodies.length - uniqueB1.size;
    const acrossB1B2 = r2.bodies.filter((b) => uniqueB1.has(b)).length;
    // What the last B1 wrote that did not come from A since its start: its channel's replay.
    const replayed = num(mb1, "SINK.k1", "EventDrainSuccessCount") - num(mb1, "SOURCE.r1", "EventAcceptedCount");
    console.log(
      `failover-kill: B1 killed after accepting ${acceptedByB1} events (${backlogAtB1} in its channel at the last reading); ` +
        `restarted, killed again after draining ${drainedBeforeSecondKill} (${leftAtSecondKill} left at the last reading); ` +
        `restarted again, replayed ${replayed} from its file channel; ${r1.files.length} files in b1's output; ` +
        `b1 wrote ${r1.bodies.length}, b2 wrote ${r2.bodies.length}; ${union.size} unique of ${total}, ${duplicates} duplicates (${withinB1} within b1, ${acrossB1B2} across b1 and b2); ` +
        `A: k1 write failures ${ma["SINK.k1"].EventWriteFail}, k2 drained ${ma["SINK.k2"].EventDrainSuccessCount}; torn tails ${r1.torn + r2.torn}`,
    );
    expect(r2.bodies.length).toBeGreaterThan(0);
    // Per hop, every event a downstream agent acknowledged to A is in that agent's output:
    // for B1 this includes what its file channel held when it was killed.
    expect(uniqueB1.size).toBeGreaterThanOrEqual(num(ma, "SINK.k1", "EventDrainSuccessCount"));
    expect(new Set(r2.bodies).size).toBeGreaterThanOrEqual(num(ma, "SINK.k2", "EventDrainSuccessCount"));
    expect(num(ma, "SINK.k1", "EventWriteFail")).toBeGreaterThanOrEqual(1);
    expect(num(ma, "SINK.k1", "EventDrainSuccessCount") + num(ma, "SINK.k2", "EventDrainSuccessCount")).toBe(total);
    // At-least-once across the crashes costs at most the batch A had in flight to B1 plus the
    // batches B1's file_roll had taken but not committed at each kill; allow a few batches.
    expect(duplicates).toBeLessThanOrEqual(3 * batch);

    // All three agents, the restarted B1 included, still stop cleanly.
    for (const x of [a, b1, b2]) x.child.kill("SIGTERM");
    expect(await Promise.all([a.exited(), b1.exited(), b2.exited()])).toEqual([0, 0, 0]);
  }, 90_000);
});
