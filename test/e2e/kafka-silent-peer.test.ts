/**
 * An agent (`flume run`, a real process) whose Kafka sink, source and channel name a peer that
 * accepts connections and never answers (a hung broker, or a port that is no Kafka broker's):
 * each start gives up within its bound and /ready names the component with that error; and an
 * agent stopped while those starts wait stops at once instead of after the client's retries.
 */
import { afterEach, expect, test } from "bun:test";
import { agentsAfterEach, expectStopsOnSigterm, fetchMetrics, freePort, tempDir, waitUntil } from "../support/helpers.ts";
import { type SilentPeer, silentPeer } from "../support/silent-peer.ts";

const { cleanups, startAgent } = agentsAfterEach();

let peer: SilentPeer | null = null;
afterEach(() => {
  peer?.close();
  peer = null;
});

/** seq -> memory -> kafka sink k1; kafka source r2 -> memory -> null; seq -> kafka channel c3 -> null: all three at the peer, with the given client settings. */
function conf(bootstrap: string, settings: Record<string, number>): string {
  const client = (prefix: string) => Object.entries(settings).map(([k, v]) => `${prefix}.${k} = ${v}`);
  return [
    "a1.sources = r1 r2 r3",
    "a1.channels = c1 c2 c3",
    "a1.sinks = k1 k2 k3",
    "a1.sources.r1.type = seq",
    "a1.sources.r1.totalEvents = 10",
    "a1.sources.r1.channels = c1",
    "a1.channels.c1.type = memory",
    "a1.sinks.k1.type = kafka",
    "a1.sinks.k1.channel = c1",
    `a1.sinks.k1.kafka.bootstrap.servers = ${bootstrap}`,
    "a1.sinks.k1.kafka.topic = out",
    ...client("a1.sinks.k1.kafka.producer"),
    "a1.sources.r2.type = kafka",
    `a1.sources.r2.kafka.bootstrap.servers = ${bootstrap}`,
    "a1.sources.r2.kafka.topics = in",
    "a1.sources.r2.channels = c2",
    "a1.sources.r2.batchSize = 100",
    ...client("a1.sources.r2.kafka.consumer"),
    "a1.sources.r2.kafka.consumer.session.timeout.ms = 6000",
    "a1.channels.c2.type = memory",
    "a1.sinks.k2.type = null",
    "a1.sinks.k2.channel = c2",
    "a1.sources.r3.type = seq",
    "a1.sources.r3.totalEvents = 10",
    "a1.sources.r3.channels = c3",
    "a1.channels.c3.type = kafka",
    `a1.channels.c3.kafka.bootstrap.servers = ${bootstrap}`,
    ...client("a1.channels.c3.kafka.producer"),
    ...client("a1.channels.c3.kafka.consumer"),
    "a1.channels.c3.kafka.consumer.session.timeout.ms = 6000",
    "a1.sinks.k3.type = null",
    "a1.sinks.k3.channel = c3",
    "",
  ].join("\n");
}

interface Ready {
  notStarted: { kind: string; name: string; error?: string }[];
}

test("a broker that accepts connections and never answers: each Kafka start gives up within its bound (the client's nested retries would take 16 requests), and /ready names the sink, the source and the channel with it", async () => {
  peer = await silentPeer();
  const { dir, cleanup } = tempDir("flume-kafka-silent-");
  cleanups.push(cleanup);
  const port = await freePort();
  const agent = startAgent(dir, "a1", conf(`127.0.0.1:${peer.port}`, { "socket.connection.setup.timeout.ms": 1000, "request.timeout.ms": 2000 }), port);
  // The producers' bound: 1000 + 2000 ms; the consumers': request.timeout.ms + session.timeout.ms, 2000 + 6000 ms.
  const want: Record<string, string> = { k1: "within 3000 ms (socket.connection.setup.timeout.ms + request.timeout.ms)", c3: "within 3000 ms (socket.connection.setup.timeout.ms + request.timeout.ms)", r2: "within 8000 ms (request.timeout.ms + session.timeout.ms)" };
  let ready: Ready | null = null;
  await waitUntil(
    async () => {
      const r = await fetch(`http://127.0.0.1:${port}/ready`).catch(() => null);
      if (!r) return false;
      ready = (await r.json()) as Ready;
      return Object.entries(want).every(([name, text]) => ready!.notStarted.some((c) => c.name === name && c.error?.includes(text)));
    },
    "/ready naming the Kafka sink, source and channel with the start's bound",
    60_000,
    100,
  );
  for (const name of Object.keys(want)) {
    const c = (ready as Ready | null)?.notStarted.find((x) => x.name === name);
    expect(c?.error).toContain(`Kafka at 127.0.0.1:${peer.port}: no answer from the brokers ${want[name]}`);
  }
  // r3's puts into the channel not started are refused with its error, named once.
  await agent.waitFor(/channel refused \d+ events?: kafka channel c3: Kafka at /, 60_000);
  expect(agent.stdout + agent.stderr).not.toContain("kafka channel c3: kafka channel c3");
});

/** One Kafka component at the peer, the rest of its agent local: a channel starts before its sink runners and the sources, so each is alone in waiting. */
const ALONE: Record<"sink" | "source" | "channel", { name: string; conf: (bootstrap: string, dir: string) => string }> = {
  // A file channel: the seq source runs beside the waiting sink, and what it accepted (1,000 events, not the disk's worth) is kept for the next start.
  sink: {
    name: "k1",
    conf: (b, dir) => `a1.sources = r1\na1.channels = c1\na1.sinks = k1\na1.sources.r1.type = seq\na1.sources.r1.totalEvents = 1000\na1.sources.r1.channels = c1\na1.channels.c1.type = file\na1.channels.c1.checkpointDir = ${dir}/checkpoint\na1.channels.c1.dataDirs = ${dir}/data\na1.sinks.k1.type = kafka\na1.sinks.k1.channel = c1\na1.sinks.k1.kafka.bootstrap.servers = ${b}\na1.sinks.k1.kafka.topic = out\na1.sinks.k1.kafka.producer.request.timeout.ms = 300000\n`,
  },
  source: {
    name: "r1",
    conf: (b) => `a1.sources = r1\na1.channels = c1\na1.sinks = k1\na1.sources.r1.type = kafka\na1.sources.r1.kafka.bootstrap.servers = ${b}\na1.sources.r1.kafka.topics = in\na1.sources.r1.batchSize = 100\na1.sources.r1.channels = c1\na1.sources.r1.kafka.consumer.request.timeout.ms = 300000\na1.channels.c1.type = memory\na1.sinks.k1.type = null\na1.sinks.k1.channel = c1\n`,
  },
  channel: {
    name: "c1",
    conf: (b) => `a1.sources = r1\na1.channels = c1\na1.sinks = k1\na1.sources.r1.type = seq\na1.sources.r1.channels = c1\na1.channels.c1.type = kafka\na1.channels.c1.kafka.bootstrap.servers = ${b}\na1.channels.c1.kafka.producer.request.timeout.ms = 300000\na1.sinks.k1.type = null\na1.sinks.k1.channel = c1\n`,
  },
};

for (const kind of ["sink", "source", "channel"] as const) {
  test(`SIGTERM while a Kafka ${kind} starts, waiting on a broker that never answers: the start is given up at once and the agent exits, though its first request may wait 300 s`, async () => {
    peer = await silentPeer();
    const { dir, cleanup } = tempDir("flume-kafka-silent-stop-");
    cleanups.push(cleanup);
    const { name, conf: confOf } = ALONE[kind];
    const agent = startAgent(dir, "a1", confOf(`127.0.0.1:${peer.port}`, dir), await freePort());
    await waitUntil(() => peer!.accepted() >= 1, `the Kafka ${kind} connected to the peer`, 60_000, 50);
    // Without the abort, the start waits 300 s for its first answer, and the stop waits for the start.
    await expectStopsOnSigterm(agent, 60_000);
    const log = agent.stdout + agent.stderr;
    expect(log).toContain(`${name}: start given up, as it stops (kafka ${kind} ${name}: stopped while it started, before the brokers answered)`);
    expect(log).toContain("agent a1 stopped");
    expect(log).not.toContain("Unable to start");
  });
}

test("a Kafka sink and a Kafka channel whose starts wait on a broker that never answers: /health and /ready answer meanwhile (/ready lists each as STARTING), and the sink's source already fills its channel", async () => {
  peer = await silentPeer();
  const { dir, cleanup } = tempDir("flume-kafka-silent-health-");
  cleanups.push(cleanup);
  const bootstrap = `127.0.0.1:${peer.port}`;
  // k1's agent (a1) and c1's agent (a2), each with a first request that may wait 300 s.
  const agents = [
    { name: "a1", waiting: { kind: "sink runner", name: "k1" }, conf: ALONE.sink.conf(bootstrap, dir), port: await freePort() },
    { name: "a2", waiting: { kind: "channel", name: "c1" }, conf: ALONE.channel.conf(bootstrap, dir).replaceAll("a1.", "a2."), port: await freePort() },
  ];
  for (const a of agents) startAgent(dir, a.name, a.conf, a.port);
  await waitUntil(() => peer!.accepted() >= 2, "both agents connected to the peer", 60_000, 50);
  for (const a of agents) {
    await waitUntil(async () => (await fetch(`http://127.0.0.1:${a.port}/health`).catch(() => null))?.status === 200, `${a.name}'s /health answering`, 60_000, 50);
    const r = await fetch(`http://127.0.0.1:${a.port}/ready`);
    expect(r.status).toBe(503);
    const ready = (await r.json()) as { ready: boolean; notStarted: { kind: string; name: string; state: string }[] };
    expect(ready.ready).toBe(false);
    expect(ready.notStarted).toContainEqual({ ...a.waiting, state: "STARTING" });
  }
  // a1's seq source started beside its waiting sink: its events wait in the file channel.
  await waitUntil(async () => Number((await fetchMetrics(agents[0].port))["CHANNEL.c1"]?.ChannelSize ?? 0) > 0, "a1's seq events waiting in c1", 60_000, 50);
});
