import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { definition, JetStreamChannel } from "../../../src/components/channels/jetstream/index.ts";
import { lookupComponent } from "../../../src/components/registry.ts";
import { parseConfig } from "../../../src/config/schema.ts";
import { systemClock } from "../../../src/core/clock.ts";
import { ChannelException, ChannelFullException } from "../../../src/core/errors.ts";
import { bodyText, createEvent, type Event } from "../../../src/core/event.ts";
import { MemoryLogger } from "../../../src/core/logger.ts";
import { freePort, sleep, tempDir, waitUntil } from "../../helpers.ts";
import { selfSignedCert } from "../../rpc/support.ts";
import { events, putAll } from "../../core/support.ts";
import { hasNats, natsClient, type NatsSetup, startNats } from "../../support/nats.ts";

let server: NatsSetup;
let streamNo = 0;
const open: JetStreamChannel[] = [];

/** A jetstream channel built from properties, as `flume run` builds it. */
function channel(props: Record<string, string>, logger = new MemoryLogger(), name = "c1"): JetStreamChannel {
  const { config, errors } = parseConfig(definition.schema, { servers: server.servers, "ack-wait": "2000", ...props });
  expect(errors).toEqual([]);
  expect(definition.validate?.(config) ?? []).toEqual([]);
  const ch = definition.create(config, { name, agentName: "a1", clock: systemClock, logger });
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
  const deadline = Date.now() + ms;
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
  if (hasNats) server = await startNats();
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((ch) => ch.stop()));
});
afterAll(async () => {
  await server?.stop();
});

test("type jetstream resolves to the channel, declared durable, with bounded defaults", () => {
  expect(lookupComponent("channel", "jetstream")).toBe(definition);
  const defaults = Object.fromEntries(definition.schema.props.map((p) => [p.key, p.default]));
  expect(defaults).toMatchObject({ servers: "nats://127.0.0.1:4222", capacity: 1000000, transactionCapacity: 1000, consumer: "flume", replicas: 1, discard: "new", retention: "workqueue", "ack-wait": 30000 });
  const { config } = parseConfig(definition.schema, { stream: "S" });
  const ch = definition.create(config, { name: "c9", agentName: "a1", clock: systemClock, logger: new MemoryLogger() });
  expect(ch.durable).toBe(true);
  expect(ch.getTransactionCapacity()).toBe(1000);
});

test("validate names the key: bad stream name, wildcard subject, transactionCapacity over capacity, two kinds of credentials", () => {
  const { config } = parseConfig(definition.schema, { stream: "bad.name", subject: "logs.>", capacity: "10", transactionCapacity: "20", user: "u", password: "p", token: "t" });
  const keys = (definition.validate?.(config) ?? []).map((e) => e.key).sort();
  expect(keys).toEqual(["stream", "subject", "token", "transactionCapacity"]);
});

describe.skipIf(!hasNats)("jetstream channel on a real nats-server (needs nats-server)", () => {
  test("a put is invisible to takers until it commits; commit returns once stored; headers and binary bodies round-trip", async () => {
    const stream = nextStream();
    const a = await started(channel({ stream }));
    const b = await started(channel({ stream }, new MemoryLogger(), "c2"));
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

  test("plain headers are ordinary NATS headers that any NATS client reads", async () => {
    const stream = nextStream();
    const ch = await started(channel({ stream, subject: `plain.${stream}` }));
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

  test("rollback of a take returns the events: another agent's channel takes them at once", async () => {
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
    await a.stop();
    const b = await started(channel({ stream }, new MemoryLogger(), "c2"));
    const again = await takeN(b, 5);
    expect(again.map(bodyText).sort()).toEqual(["event 0", "event 1", "event 2", "event 3", "event 4"]);
    expect(await takeN(b, 1, 500)).toEqual([]);
  });

  test("transactionCapacity bounds puts and takes of one transaction", async () => {
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

  test("a full stream (capacity, discard new) is ChannelFullException after keep-alive; room comes back once takes commit", async () => {
    const stream = nextStream();
    const ch = await started(channel({ stream, capacity: "4", transactionCapacity: "4", "keep-alive": "0" }));
    await putAll(ch, events(4));
    const err = await putAll(ch, [createEvent("one too many")]).catch((e) => e);
    expect(err).toBeInstanceOf(ChannelFullException);
    expect(String(err.message)).toContain(`stream ${stream} is full`);
    expect((await takeN(ch, 4)).length).toBe(4);
    await putAll(ch, [createEvent("fits now")]);
    expect((await takeN(ch, 1)).map(bodyText)).toEqual(["fits now"]);
  });

  test("a commit retried after a partial failure reuses its message ids: nothing is stored twice", async () => {
    const stream = nextStream();
    const a = await started(channel({ stream, capacity: "3", transactionCapacity: "3", "keep-alive": "0", prefetch: "1" }));
    const tx = a.getTransaction();
    tx.begin();
    for (const e of events(3, "tx")) tx.put(e);
    await putAll(a, events(1, "first"));
    // One slot taken: the commit stores two events and is refused the third.
    expect(await tx.commit().catch((e) => e)).toBeInstanceOf(ChannelFullException);
    expect((await takeN(a, 3)).map(bodyText).sort()).toEqual(["first 0", "tx 0", "tx 1"]);
    await tx.commit();
    tx.close();
    const rest = await takeN(a, 5, 1500);
    expect(rest.map(bodyText)).toEqual(["tx 2"]);
    expect(a.counter.values["channel.jetstream.publish.duplicate.count"]).toBe(2);
  });

  test("two channels on one stream and consumer are competing consumers: every event taken exactly once", async () => {
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

  test("events survive the channel's restart; takes open at a crash are delivered again after ack-wait", async () => {
    const stream = nextStream();
    const a = await started(channel({ stream }));
    await putAll(a, events(6));
    await waitUntil(() => a.prefetched === 6, "prefetch");
    const tx = a.getTransaction();
    tx.begin();
    expect(bodyText(tx.take()!)).toBe("event 0");
    // A crash: the process is gone without rollback or ack (the connection just closes).
    await a.stop();
    const b = await started(channel({ stream }, new MemoryLogger(), "c2"));
    const got = await takeN(b, 6, 6000);
    expect(got.map(bodyText).sort()).toEqual(["event 0", "event 1", "event 2", "event 3", "event 4", "event 5"]);
    await waitUntil(() => b.counter.values.ChannelSize === 0, "ChannelSize 0", 3000);
  });

  test("ChannelSize is the shared backlog read from the server; ChannelCapacity is the stream's max-msgs", async () => {
    const stream = nextStream();
    const ch = await started(channel({ stream, capacity: "500", transactionCapacity: "100" }));
    await putAll(ch, events(7));
    await waitUntil(() => ch.counter.values.ChannelSize === 7, "ChannelSize 7", 4000);
    expect(ch.counter.snapshot()).toMatchObject({ ChannelCapacity: "500", ChannelSize: "7", Connected: "true", ChannelFillPercentage: "1.4" });
  });

  test("a server that is down at start: the channel logs, retries, refuses commits, and works once the server is up", async () => {
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

describe.skipIf(!hasNats)("jetstream channel: TLS and credentials (needs nats-server)", () => {
  test("TLS with a PEM truststore and user/password: events flow; a wrong password is retried with a log line naming the refusal", async () => {
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
