import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { definition, JetStreamChannel } from "../../../src/components/channels/jetstream/index.ts";
import { componentContext } from "../../../src/components/component.ts";
import { lookupComponent } from "../../../src/components/registry.ts";
import { ChannelException, ChannelFullException } from "../../../src/core/errors.ts";
import { bodyText, createEvent, type Event } from "../../../src/core/event.ts";
import { MemoryLogger } from "../../../src/core/logger.ts";
import { VirtualClock } from "../../../src/core/virtual-clock.ts";
import { events, putAll } from "../../support/core.ts";
import { freePort, sleep, tempDir, waitBound, waitUntil } from "../../support/helpers.ts";
import { natsClient, type NatsSetup, startNats } from "../../support/nats.ts";
import { needsNatsServer, needsOpenssl } from "../../support/requires.ts";
import { selfSignedCert } from "../../support/tls.ts";

let server: NatsSetup;
let streamNo = 0;
const open: JetStreamChannel[] = [];

/** A jetstream channel built from properties, as `flume run` builds it. */
function channel(props: Record<string, string>, logger = new MemoryLogger(), name = "c1"): JetStreamChannel {
  const { options, errors } = definition.parse({ servers: server.servers, "ack-wait": "2000", ...props });
  expect(errors).toEqual([]);
  expect(definition.validate?.(options) ?? []).toEqual([]);
  const ch = definition.create(options, componentContext(name, { logger }));
  open.push(ch);
  return ch;
}

async function started(ch: JetStreamChannel): Promise<JetStreamChannel> {
  ch.start();
  await waitUntil(() => ch.connected, `${ch.name} connected`, 8000);
  return ch;
}

function nextStream(): string {
  return `T${process.pid}_${++streamNo}`;
}

/** Takes until n events arrived (waiting for prefetch) or ms passed; commits each batch. */
async function takeN(ch: JetStreamChannel, n: number, ms = 5000): Promise<Event[]> {
  const out: Event[] = [];
  const deadline = Date.now() + waitBound(ms);
  while (out.length < n && Date.now() < deadline) {
    const tx = ch.getTransaction();
    tx.begin();
    const before = out.length;
    while (out.length < n) {
      const e = tx.take();
      if (e === null) break;
      out.push(e);
    }
    await tx.commit();
    tx.close();
    if (out.length === before) await sleep(10);
  }
  return out;
}

beforeAll(async () => {
  if (needsNatsServer.holds) server = await startNats();
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((ch) => ch.stop()));
});
afterAll(async () => {
  await server?.stop();
});

/** Puts 10 events and takes them in a transaction left open. */
async function tenTakenOpen(ch: JetStreamChannel) {
  await putAll(ch, events(10));
  const tx = ch.getTransaction();
  tx.begin();
  const taken: Event[] = [];
  await waitUntil(() => {
    for (let e = tx.take(); e !== null; e = tx.take()) taken.push(e);
    return taken.length === 10;
  }, "the 10 events taken", 5000);
  return { tx, taken };
}

needsNatsServer.test("a take commit whose acks the server confirms only after commit-timeout commits (the server applied them: failing it would let the sink drop events that never come again); it is counted and logged", async () => {
  const own = await startNats();
  const pid = own.node.pid!;
  try {
    const logger = new MemoryLogger();
    const stream = nextStream();
    const ch = await started(channel({ servers: own.servers, stream, "commit-timeout": "1000" }, logger));
    const { tx } = await tenTakenOpen(ch);
    // The server reads the acks only when it runs again, after commit-timeout.
    process.kill(pid, "SIGSTOP");
    try {
      await tx.commit();
    } finally {
      process.kill(pid, "SIGCONT");
    }
    tx.close();
    expect(ch.counter.values["channel.jetstream.commit.unconfirmed.count"]).toBe(1);
    expect(ch.counter.values.EventTakeSuccessCount).toBe(10);
    expect(logger.lines.map((l) => l.message)).toContainEqual(expect.stringContaining("did not confirm the acknowledgements of a take of 10 event(s) within 1000 ms (commit-timeout)"));
    // The server applied the acks: the stream is empty, nothing comes again (ack-wait is 2 s).
    const c = await natsClient(own.servers);
    try {
      await waitUntil(async () => (await c.jsm.streams.info(stream)).state.messages === 0, "the acked messages gone from the stream", 5000, 50);
    } finally {
      await c.close();
    }
    expect(await takeN(ch, 1, 3000)).toEqual([]);
  } finally {
    await own.stop();
  }
});

needsNatsServer.test("a take commit made while the connection is closed fails (its acks are never sent) and its events come again after ack-wait", async () => {
  const own = await startNats();
  const pid = own.node.pid!;
  try {
    const stream = nextStream();
    const ch = await started(channel({ servers: own.servers, stream, "reconnect-wait": "100" }));
    const { tx, taken } = await tenTakenOpen(ch);
    // The connection closes and no new one opens while the server is stopped.
    process.kill(pid, "SIGSTOP");
    try {
      await (ch as unknown as { link: { nc: { close(): Promise<void> } } }).link.nc.close();
      await waitUntil(() => !ch.connected, "the channel disconnected", 5000);
      await expect(tx.commit()).rejects.toThrow("take commit failed: jetstream channel c1: not connected to NATS; the acknowledgements will not reach the server");
      await tx.rollback();
      tx.close();
    } finally {
      process.kill(pid, "SIGCONT");
    }
    await waitUntil(() => ch.connected, "the channel connected again", 10000);
    // Delivered again by the server after ack-wait (2 s), and taken.
    expect((await takeN(ch, 10, 15000)).map(bodyText)).toEqual(taken.map(bodyText));
  } finally {
    await own.stop();
  }
});

test("type jetstream resolves to the channel, declared durable, with bounded defaults", () => {
  expect(lookupComponent("channel", "jetstream")).toBe(definition);
  const defaults = Object.fromEntries(definition.schema.props.map((p) => [p.key, p.default]));
  expect(defaults).toMatchObject({ servers: "nats://127.0.0.1:4222", capacity: 1000000, transactionCapacity: 1000, consumer: "flume", replicas: 1, discard: "new", retention: "workqueue", "ack-wait": 30000 });
  const { options } = definition.parse({ stream: "S" });
  const ch = definition.create(options, componentContext("c9"));
  expect(definition.durability).toBeDefined();
  expect(ch.durable).toBe(true);
  expect(ch.getTransactionCapacity()).toBe(1000);
});

test("validate names the key: bad stream name, wildcard subject, transactionCapacity over capacity, two kinds of credentials", () => {
  const { options } = definition.parse({ stream: "bad.name", subject: "logs.>", capacity: "10", transactionCapacity: "20", user: "u", password: "p", token: "t" });
  const keys = (definition.validate?.(options) ?? []).map((e) => e.key).sort();
  expect(keys).toEqual(["stream", "subject", "token", "transactionCapacity"]);
});

test("TLS is the shared client TLS: a Java key store as truststore is refused with the command that exports it; roles name capacity, transactionCapacity and keep-alive", () => {
  const tmp = tempDir();
  try {
    const jks = `${tmp.dir}/trust.jks`;
    writeFileSync(jks, Buffer.from([0xfe, 0xed, 0xfe, 0xed, 0, 0, 0, 2]));
    const { options } = definition.parse({ stream: "S", ssl: "true", truststore: jks });
    const problems = definition.validate?.(options) ?? [];
    expect(problems).toHaveLength(1);
    expect(problems[0].key).toBe("truststore");
    expect(problems[0].message).toContain("keytool -exportcert");
    const roles = Object.fromEntries(definition.schema.props.filter((p) => p.roles).map((p) => [p.key, p.roles]));
    expect(roles).toEqual({ capacity: ["capacity"], transactionCapacity: ["transactionCapacity"], "keep-alive": ["keepAlive"] });
  } finally {
    tmp.cleanup();
  }
});

describe("jetstream channel on a real nats-server", () => {
  needsNatsServer.test("a stop while pulls fail and wait to be retried returns at once, even on a clock that does not move (the simulator's)", async () => {
    const stream = nextStream();
    const logger = new MemoryLogger();
    const { options, errors } = definition.parse({ servers: server.servers, stream, "ack-wait": "2000", "reconnect-wait": "1000" });
    expect(errors).toEqual([]);
    const clock = new VirtualClock(1_000_000);
    const ch = definition.create(options, componentContext("c1", { logger, clock }));
    await ch.start();
    // Connecting retries on the channel's clock too: move it until connected.
    for (let i = 0; i < 400 && !ch.connected; i++) {
      await sleep(5);
      await clock.advance(20);
    }
    expect(ch.connected).toBe(true);
    const c = await natsClient(server.servers);
    try {
      // Without its consumer every pull fails; the puller waits reconnect-wait (virtual) to retry.
      await c.jsm.consumers.delete(stream, "flume");
      await waitUntil(() => logger.lines.some((l) => l.level === "warn" && l.message.includes("pulling from consumer flume")), "a failed pull logged", 10_000);
    } finally {
      await c.close();
    }
    const stopped = await Promise.race([ch.stop().then(() => "stopped"), sleep(5000).then(() => "still stopping after 5 s")]);
    expect(stopped).toBe("stopped");
  });

  needsNatsServer.test("framing event: a put is invisible to takers until it commits; commit returns once stored, one message per event; headers and binary bodies round-trip", async () => {
    const stream = nextStream();
    const a = await started(channel({ stream, framing: "event" }));
    const b = await started(channel({ stream, framing: "event" }, new MemoryLogger(), "c2"));
    const body = new Uint8Array([0, 255, 10, 13, 0xc3, 0x28]);
    const headers = { host: "héllo wörld ☃", "with space": "x", "a:b": "colon", "Nats-Msg-Id": "not mine", multi: "line\r\nbreak", padded: "  kept  ", empty: "" };
    const tx = a.getTransaction();
    tx.begin();
    tx.put({ headers, body });
    tx.put(createEvent("second"));
    await sleep(300);
    const c = await natsClient(server.servers);
    try {
      expect((await c.jsm.streams.info(stream)).state.messages).toBe(0);
      expect(await takeN(b, 1, 300)).toEqual([]);
      await tx.commit();
      tx.close();
      // Stored when commit returns.
      expect((await c.jsm.streams.info(stream)).state.messages).toBe(2);
    } finally {
      await c.close();
    }
    // Both channels are consumers of the one durable consumer: the events go to either.
    const got = [...(await takeN(a, 2, 1500)), ...(await takeN(b, 2, 500))];
    expect(got.length).toBe(2);
    const [first, second] = bodyText(got[0]) === "second" ? [got[1], got[0]] : [got[0], got[1]];
    expect(first.headers).toEqual(headers);
    expect([...first.body]).toEqual([...body]);
    expect(second.headers).toEqual({});
    expect(a.counter.values.EventPutSuccessCount).toBe(2);
    expect(a.counter.values.EventTakeSuccessCount + b.counter.values.EventTakeSuccessCount).toBe(2);
  });

  needsNatsServer.test("framing event: plain headers are ordinary NATS headers that any NATS client reads", async () => {
    const stream = nextStream();
    const ch = await started(channel({ stream, subject: `plain.${stream}`, framing: "event" }));
    await putAll(ch, [createEvent("x", { host: "web-1", "Content-Type": "text/plain" })]);
    const c = await natsClient(server.servers);
    try {
      const m = (await c.jsm.streams.getMessage(stream, { seq: 1 }))!;
      expect(m.subject).toBe(`plain.${stream}`);
      expect(m.header.get("host")).toBe("web-1");
      expect(m.header.get("Content-Type")).toBe("text/plain");
      expect(m.header.get("Nats-Msg-Id")).toMatch(/\.1\.0$/);
    } finally {
      await c.close();
    }
  });

  needsNatsServer.test("a rolled-back take puts its events back at the head in order; a stop hands every prefetched and held event to another agent at once", async () => {
    const stream = nextStream();
    const a = await started(channel({ stream }));
    await putAll(a, events(5));
    await waitUntil(() => a.prefetched === 5, "prefetch");
    const tx = a.getTransaction();
    tx.begin();
    const taken = [tx.take(), tx.take(), tx.take()].map((e) => bodyText(e!));
    expect(taken).toEqual(["event 0", "event 1", "event 2"]);
    await tx.rollback();
    tx.close();
    expect(a.counter.values["channel.rollback.count"]).toBe(1);
    expect(a.counter.values.ChannelSize).toBe(5);
    const again = a.getTransaction();
    again.begin();
    expect([again.take(), again.take()].map((e) => bodyText(e!))).toEqual(["event 0", "event 1"]);
    // Stopped with a transaction open: its takes and the prefetch go back to the stream.
    await a.stop();
    const b = await started(channel({ stream }, new MemoryLogger(), "c2"));
    const all = await takeN(b, 5, 1500);
    expect(all.map(bodyText)).toEqual(["event 0", "event 1", "event 2", "event 3", "event 4"]);
    expect(await takeN(b, 1, 300)).toEqual([]);
  });

  needsNatsServer.test("transactionCapacity bounds puts and takes of one transaction", async () => {
    const stream = nextStream();
    const ch = await started(channel({ stream, transactionCapacity: "3" }));
    const tx = ch.getTransaction();
    tx.begin();
    for (const e of events(3)) tx.put(e);
    expect(() => tx.put(createEvent("4th"))).toThrow(ChannelException);
    await tx.commit();
    tx.close();
    await putAll(ch, events(3, "more"));
    await waitUntil(() => ch.prefetched >= 3, "prefetch");
    const t = ch.getTransaction();
    t.begin();
    for (let i = 0; i < 3; i++) expect(t.take()).not.toBeNull();
    expect(() => t.take()).toThrow(/Take list for JetStreamTransaction, capacity 3 full/);
    await t.commit();
    t.close();
  });

  needsNatsServer.test("a full channel: a commit waits keep-alive for room, in arrival order, then fails with ChannelFullException having published nothing", async () => {
    const stream = nextStream();
    const ch = await started(channel({ stream, capacity: "4", transactionCapacity: "4", "keep-alive": "0", framing: "event" }));
    await putAll(ch, events(4));
    const err = await putAll(ch, [createEvent("one too many")]).catch((e) => e);
    expect(err).toBeInstanceOf(ChannelFullException);
    expect(String(err.message)).toContain(`stream ${stream}, capacity 4`);
    const c = await natsClient(server.servers);
    try {
      expect((await c.jsm.streams.info(stream)).state.messages).toBe(4);
    } finally {
      await c.close();
    }
    expect((await takeN(ch, 4)).length).toBe(4);
    await putAll(ch, [createEvent("fits now")]);
    expect((await takeN(ch, 1)).map(bodyText)).toEqual(["fits now"]);
    expect(ch.counter.values.ChannelSize).toBe(0);

    const waits = await started(channel({ stream: nextStream(), capacity: "2", transactionCapacity: "2", "keep-alive": "5" }, new MemoryLogger(), "c2"));
    await putAll(waits, events(2));
    const pending = putAll(waits, [createEvent("waits for room")]);
    await sleep(200);
    expect((await takeN(waits, 1)).map(bodyText)).toEqual(["event 0"]);
    await pending;
    expect((await takeN(waits, 2)).map(bodyText)).toEqual(["event 1", "waits for room"]);
  });

  needsNatsServer.test("framing event: a stream that refuses part of a commit (created smaller by someone else): the retried commit reuses its message ids, nothing is stored twice", async () => {
    const stream = nextStream();
    const c = await natsClient(server.servers);
    try {
      await c.jsm.streams.add({ name: stream, subjects: [`flume.${stream}`], retention: c.mod.RetentionPolicy.Workqueue, max_msgs: 3, discard: c.mod.DiscardPolicy.New });
    } finally {
      await c.close();
    }
    const logger = new MemoryLogger();
    const a = await started(channel({ stream, capacity: "10", transactionCapacity: "3", "keep-alive": "0", prefetch: "1", framing: "event" }, logger));
    expect(logger.lines.some((l) => l.level === "warn" && l.message.includes(`stream ${stream} exists with max-msgs 3`))).toBe(true);
    const tx = a.getTransaction();
    tx.begin();
    for (const e of events(3, "tx")) tx.put(e);
    await putAll(a, events(1, "first"));
    // The stream holds 3: it stores two and refuses the third.
    expect(await tx.commit().catch((e) => e)).toBeInstanceOf(ChannelFullException);
    expect((await takeN(a, 3)).map(bodyText).sort()).toEqual(["first 0", "tx 0", "tx 1"]);
    await tx.commit();
    tx.close();
    const rest = await takeN(a, 5, 1500);
    expect(rest.map(bodyText)).toEqual(["tx 2"]);
    expect(a.counter.values["channel.jetstream.publish.duplicate.count"]).toBe(2);
  });

  needsNatsServer.test("two channels on one stream and consumer are competing consumers: every event taken exactly once", async () => {
    const stream = nextStream();
    const producer = await started(channel({ stream }, new MemoryLogger(), "p"));
    const a = await started(channel({ stream, prefetch: "20" }, new MemoryLogger(), "a"));
    const b = await started(channel({ stream, prefetch: "20" }, new MemoryLogger(), "b"));
    for (let i = 0; i < 10; i++) await putAll(producer, events(100, "e", i * 100));
    const seen: string[] = [];
    const drain = async (ch: JetStreamChannel) => {
      const got = await takeN(ch, 1000, 2500);
      return got.map(bodyText);
    };
    // The producer's channel is a third consumer of the same durable consumer.
    const [fromA, fromB, fromP] = await Promise.all([drain(a), drain(b), drain(producer)]);
    seen.push(...fromA, ...fromB, ...fromP);
    expect(fromA.length).toBeGreaterThan(0);
    expect(fromB.length).toBeGreaterThan(0);
    expect(seen.length).toBe(1000);
    expect(new Set(seen).size).toBe(1000);
  });

  needsNatsServer.test("events survive a crash of the channel (its definition's durability): what it had taken or prefetched is delivered again after ack-wait", async () => {
    const stream = nextStream();
    const a = await started(channel({ stream, "ack-wait": "4000" }));
    // The server delivers after this, so it delivers again no sooner than ack-wait after this.
    const sent = Date.now();
    await putAll(a, events(6));
    await waitUntil(() => a.prefetched === 6, "prefetch");
    const tx = a.getTransaction();
    tx.begin();
    expect(bodyText(tx.take()!)).toBe("event 0");
    await definition.durability?.crash(a);
    const b = await started(channel({ stream, "ack-wait": "4000" }, new MemoryLogger(), "c2"));
    // Nothing is handed back by a dead process: the server waits for ack-wait.
    const got = await takeN(b, 6, 10000);
    expect(Date.now() - sent).toBeGreaterThanOrEqual(3900);
    expect(got.map(bodyText)).toEqual(["event 0", "event 1", "event 2", "event 3", "event 4", "event 5"]);
    await waitUntil(() => b.counter.values.ChannelSize === 0, "ChannelSize 0", 3000);
  });

  needsNatsServer.test("ChannelSize is the shared backlog (set at commit, read from the server every second); ChannelCapacity is capacity", async () => {
    const stream = nextStream();
    const ch = await started(channel({ stream, capacity: "500", transactionCapacity: "100" }));
    await putAll(ch, events(7));
    await waitUntil(() => ch.counter.values.ChannelSize === 7, "ChannelSize 7", 4000);
    expect(ch.counter.snapshot()).toMatchObject({ ChannelCapacity: "500", ChannelSize: "7", Connected: "true", ChannelFillPercentage: "1.4" });
    // Another agent's commits show once the server is read again.
    const other = await started(channel({ stream, capacity: "500", transactionCapacity: "100", prefetch: "1" }, new MemoryLogger(), "c2"));
    await putAll(other, events(3, "other"));
    await waitUntil(() => ch.counter.values.ChannelSize === 10, "ChannelSize 10 in the first channel", 4000);
  });

  needsNatsServer.test("a server that is down at start: the channel logs, retries, refuses commits, and works once the server is up", async () => {
    const port = await freePort();
    const logger = new MemoryLogger();
    const stream = nextStream();
    const ch = channel({ stream, servers: `nats://127.0.0.1:${port}`, "reconnect-wait": "100", "commit-timeout": "300" }, logger);
    ch.start();
    await waitUntil(() => logger.lines.some((l) => l.level === "warn" && /cannot use NATS at nats:\/\/127\.0\.0\.1:\d+: .*retrying every 100 ms/.test(l.message)), "retry log line");
    expect(await putAll(ch, events(1)).catch((e) => e)).toBeInstanceOf(ChannelException);
    const late = await startNats({ port });
    try {
      await waitUntil(() => ch.connected, "connected", 8000);
      expect(logger.lines.some((l) => l.level === "info" && /connected to NATS at .* after \d+ attempts/.test(l.message))).toBe(true);
      await putAll(ch, events(3));
      expect((await takeN(ch, 3)).map(bodyText)).toEqual(["event 0", "event 1", "event 2"]);
    } finally {
      await ch.stop();
      await late.stop();
    }
  });
});

describe("jetstream channel, batch framing (the default)", () => {
  /** Takes n events in one transaction and commits it. */
  async function takeCommit(ch: JetStreamChannel, n: number): Promise<string[]> {
    const tx = ch.getTransaction();
    tx.begin();
    const got: string[] = [];
    for (let i = 0; i < n; i++) got.push(bodyText(tx.take()!));
    await tx.commit();
    tx.close();
    return got;
  }

  needsNatsServer.test("a commit's events go in one message marked Flume-Batch: 1 with one message id; headers and binary bodies round-trip", async () => {
    const stream = nextStream();
    const a = await started(channel({ stream }));
    const body = new Uint8Array([0, 255, 10, 13, 0xc3, 0x28]);
    const headers = { host: "héllo wörld ☃", "a:b": "colon", "Nats-Msg-Id": "not mine", multi: "line\r\nbreak", empty: "" };
    await putAll(a, [{ headers, body }, createEvent("second"), createEvent("")]);
    const c = await natsClient(server.servers);
    try {
      expect((await c.jsm.streams.info(stream)).state.messages).toBe(1);
      const m = (await c.jsm.streams.getMessage(stream, { seq: 1 }))!;
      expect(m.header.get("Flume-Batch")).toBe("1");
      expect(m.header.get("Nats-Msg-Id")).toMatch(/\.1\.0-3$/);
      // u32 count, then the first event: u16 header count.
      expect([...m.data.subarray(0, 6)]).toEqual([0, 0, 0, 3, 0, 5]);
    } finally {
      await c.close();
    }
    await waitUntil(() => a.prefetched === 3, "prefetch of 3 events");
    const got = await takeN(a, 3);
    expect(got[0].headers).toEqual(headers);
    expect([...got[0].body]).toEqual([...body]);
    expect(got.slice(1).map(bodyText)).toEqual(["second", ""]);
    expect(a.counter.values).toMatchObject({ EventPutSuccessCount: 3, EventTakeSuccessCount: 3 });
  });

  needsNatsServer.test("takes smaller than a message: it is acknowledged once all its events are committed; a crash before that brings back exactly its events, the committed ones declared", async () => {
    const stream = nextStream();
    const a = await started(channel({ stream }));
    await putAll(a, events(5));
    await waitUntil(() => a.prefetched === 5, "prefetch");
    expect(await takeCommit(a, 2)).toEqual(["event 0", "event 1"]);
    const c = await natsClient(server.servers);
    try {
      // Two of five committed: the message is still the consumer's, unacknowledged.
      expect((await c.jsm.consumers.info(stream, "flume")).num_ack_pending).toBe(1);
      expect(definition.durability?.repeatedOnCrash?.(a).map(bodyText)).toEqual(["event 0", "event 1"]);
      expect(a.counter.values.ChannelSize).toBe(3);
      await definition.durability?.crash(a);
      const b = await started(channel({ stream }, new MemoryLogger(), "c2"));
      // After ack-wait the whole message comes again: its 5 events, the 2 committed included.
      expect((await takeN(b, 5, 6000)).map(bodyText)).toEqual(["event 0", "event 1", "event 2", "event 3", "event 4"]);
      await waitUntil(async () => (await c.jsm.streams.info(stream)).state.messages === 0, "message acknowledged", 3000);
      expect(definition.durability?.repeatedOnCrash?.(b)).toEqual([]);
    } finally {
      await c.close();
    }
  });

  needsNatsServer.test("a take spanning messages, and a rollback inside one: events come in commit order, each message acknowledged when its last event commits", async () => {
    const stream = nextStream();
    const a = await started(channel({ stream }));
    await putAll(a, events(3, "a"));
    await putAll(a, events(3, "b"));
    await waitUntil(() => a.prefetched === 6, "prefetch");
    const tx = a.getTransaction();
    tx.begin();
    expect([0, 1, 2, 3].map(() => bodyText(tx.take()!))).toEqual(["a 0", "a 1", "a 2", "b 0"]);
    await tx.rollback();
    tx.close();
    expect(await takeCommit(a, 4)).toEqual(["a 0", "a 1", "a 2", "b 0"]);
    const c = await natsClient(server.servers);
    try {
      await waitUntil(async () => (await c.jsm.streams.info(stream)).state.messages === 1, "first message acknowledged", 3000);
      expect(await takeCommit(a, 2)).toEqual(["b 1", "b 2"]);
      await waitUntil(async () => (await c.jsm.streams.info(stream)).state.messages === 0, "second message acknowledged", 3000);
    } finally {
      await c.close();
    }
  });

  needsNatsServer.test("a commit larger than max_payload is split into messages that fit; an event larger than max_payload fails naming the setting", async () => {
    const tmp = tempDir();
    const conf = `${tmp.dir}/small.conf`;
    writeFileSync(conf, "max_payload: 4096\n");
    const small = await startNats({ extra: ["-c", conf] });
    try {
      const stream = nextStream();
      const ch = await started(channel({ stream, servers: small.servers }));
      const hundred = Array.from({ length: 100 }, (_, i) => createEvent(`${i}`.padStart(100, "x"), { n: String(i) }));
      await putAll(ch, hundred);
      const c = await natsClient(small.servers);
      try {
        const info = await c.jsm.streams.info(stream);
        // About 120 bytes per framed event: 100 events need at least 3 messages of 4096 bytes.
        expect(info.state.messages).toBeGreaterThanOrEqual(3);
        for (let seq = 1; seq <= info.state.messages; seq++) {
          const m = (await c.jsm.streams.getMessage(stream, { seq }))!;
          expect(m.data.length).toBeLessThanOrEqual(4096);
        }
      } finally {
        await c.close();
      }
      expect((await takeN(ch, 100)).map((e) => e.headers.n)).toEqual(hundred.map((_, i) => String(i)));
      const err = await putAll(ch, [createEvent(new Uint8Array(5000))]).catch((e) => e);
      expect(err).toBeInstanceOf(ChannelException);
      expect(String(err.message)).toMatch(/event 0 of the batch \(framed with its headers\) of 5006 bytes does not fit in one NATS message: the server's max_payload is \d+ bytes \(raise max_payload/);
    } finally {
      await Promise.all(open.splice(0).map((x) => x.stop()));
      await small.stop();
      tmp.cleanup();
    }
  });
});

describe("jetstream channel: TLS and credentials", () => {
  needsNatsServer.and(needsOpenssl).test("TLS with a PEM truststore and user/password: events flow; a wrong password is retried with a log line naming the refusal", async () => {
    const tmp = tempDir();
    const { cert, key } = selfSignedCert(tmp.dir);
    const secure = await startNats({ extra: ["--tls", "--tlscert", cert, "--tlskey", key, "--user", "flume", "--pass", "s3cret"] });
    try {
      const stream = nextStream();
      const ch = channel({ stream, servers: secure.servers, ssl: "true", truststore: cert, user: "flume", password: "s3cret" });
      await started(ch);
      await putAll(ch, events(2));
      expect((await takeN(ch, 2)).map(bodyText)).toEqual(["event 0", "event 1"]);
      const logger = new MemoryLogger();
      const wrong = channel({ stream, servers: secure.servers, ssl: "true", truststore: cert, user: "flume", password: "nope", "reconnect-wait": "100" }, logger, "c3");
      wrong.start();
      await waitUntil(() => logger.lines.some((l) => l.level === "warn" && /cannot use NATS .*(authoriz|auth)/i.test(l.message)), "authorization failure logged", 5000);
      expect(wrong.connected).toBe(false);
      const untrusted = new MemoryLogger();
      const noCa = channel({ stream, servers: secure.servers, ssl: "true", user: "flume", password: "s3cret", "reconnect-wait": "100" }, untrusted, "c4");
      noCa.start();
      await waitUntil(() => untrusted.lines.some((l) => l.level === "warn" && /cannot use NATS .*(certificate|self.signed)/i.test(l.message)), "untrusted certificate logged", 5000);
      expect(noCa.connected).toBe(false);
    } finally {
      await Promise.all(open.splice(0).map((c) => c.stop()));
      await secure.stop();
      tmp.cleanup();
    }
  });
});
