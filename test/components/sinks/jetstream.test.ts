import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { lookupComponent } from "../../../src/components/registry.ts";
import { definition, type JetStreamSink } from "../../../src/components/sinks/jetstream.ts";
import { componentContext } from "../../../src/components/component.ts";
import { EventDeliveryException } from "../../../src/core/errors.ts";
import { createEvent } from "../../../src/core/event.ts";
import { MemoryLogger } from "../../../src/core/logger.ts";
import { MemoryChannel } from "../../../src/core/memory-channel.ts";
import { writeFileSync } from "node:fs";
import { decodeBatch } from "../../../src/nats/batch-frame.ts";
import { freePort, tempDir, waitBound, waitUntil } from "../../support/helpers.ts";
import { events, putAll } from "../../support/core.ts";
import { natsClient, type NatsSetup, startNats } from "../../support/nats.ts";
import { needsNatsServer } from "../../support/requires.ts";

let server: NatsSetup;
let streamNo = 0;
const open: JetStreamSink[] = [];

function sink(props: Record<string, string>, logger = new MemoryLogger()): { sink: JetStreamSink; channel: MemoryChannel } {
  const { options, errors } = definition.parse({ servers: server.servers, ...props });
  expect(errors).toEqual([]);
  expect(definition.validate?.(options) ?? []).toEqual([]);
  const k = definition.create(options, componentContext("k1", { logger }));
  const channel = new MemoryChannel("c1", { capacity: 1000, transactionCapacity: 100 });
  channel.start();
  k.setChannel(channel);
  open.push(k);
  return { sink: k, channel };
}

async function started(k: JetStreamSink): Promise<void> {
  k.start();
  await waitUntil(() => k.connected, "sink connected", 8000);
}

/** Every message of the stream, oldest first, without consuming it. */
async function storedBodies(stream: string): Promise<string[]> {
  const c = await natsClient(server.servers);
  try {
    const info = await c.jsm.streams.info(stream);
    const out: string[] = [];
    for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
      const m = await c.jsm.streams.getMessage(stream, { seq }).catch(() => null);
      if (m) out.push(new TextDecoder().decode(m.data));
    }
    return out;
  } finally {
    await c.close();
  }
}

beforeAll(async () => {
  if (needsNatsServer.holds) server = await startNats();
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((k) => k.stop()));
});
afterAll(async () => {
  await server?.stop();
});

test("type jetstream resolves to the sink; a wildcard subject is refused by validate", () => {
  expect(lookupComponent("sink", "jetstream")).toBe(definition);
  const { options: config } = definition.parse({ stream: "S", subject: "a.*" });
  expect((definition.validate?.(config) ?? []).map((e) => e.key)).toEqual(["subject"]);
});

describe("jetstream sink on a real nats-server", () => {
  needsNatsServer.test("publishes a taken batch; the take commits once the stream stored every event; headers travel as NATS headers", async () => {
    const stream = `K${process.pid}_${++streamNo}`;
    const { sink: k, channel } = sink({ stream, "batch-size": "10" });
    await started(k);
    await putAll(channel, events(25).map((e, i) => ({ ...e, headers: { n: String(i), host: "wörker" } })));
    expect(await k.process()).toBe("READY");
    expect(channel.size).toBe(15);
    expect(await storedBodies(stream)).toEqual(events(10).map((_, i) => `event ${i}`));
    expect(await k.process()).toBe("READY");
    // Five left: an underflowing batch is still READY; an empty one is BACKOFF (as Flume's Kafka sink).
    expect(await k.process()).toBe("READY");
    expect(await k.process()).toBe("BACKOFF");
    expect(channel.size).toBe(0);
    const c = await natsClient(server.servers);
    try {
      const m = (await c.jsm.streams.getMessage(stream, { seq: 25 }))!;
      expect(m.header.get("n")).toBe("24");
      expect(m.header.get("host")).toBe("wörker");
    } finally {
      await c.close();
    }
    expect(k.counter.values).toMatchObject({ EventDrainAttemptCount: 25, EventDrainSuccessCount: 25, BatchCompleteCount: 2, BatchUnderflowCount: 1, EventWriteFail: 0 });
  });

  needsNatsServer.test("a failed batch rolls back into the channel; the resent batch reuses its message ids, so the stream stores nothing twice", async () => {
    const stream = `K${process.pid}_${++streamNo}`;
    const { sink: k, channel } = sink({ stream, "batch-size": "8", "max-msgs": "5", retention: "limits" });
    await started(k);
    await putAll(channel, events(8));
    const err = await k.process().catch((e) => e);
    expect(err).toBeInstanceOf(EventDeliveryException);
    expect(String(err.message)).toContain(`stream ${stream} is full`);
    // Five of the eight went in; all eight are back in the channel.
    expect(channel.size).toBe(8);
    expect(await storedBodies(stream)).toEqual(events(5).map((_, i) => `event ${i}`));
    const c = await natsClient(server.servers);
    try {
      await c.jsm.streams.update(stream, { max_msgs: 100 });
    } finally {
      await c.close();
    }
    expect(await k.process()).toBe("READY");
    expect(channel.size).toBe(0);
    expect(await storedBodies(stream)).toEqual(events(8).map((_, i) => `event ${i}`));
    expect(k.counter.values.EventWriteFail).toBe(1);
  });

  needsNatsServer.test("msg-id-header: events carrying the same id are stored once, whoever sends them", async () => {
    const stream = `K${process.pid}_${++streamNo}`;
    const { sink: k, channel } = sink({ stream, "msg-id-header": "id" });
    await started(k);
    await putAll(channel, [createEvent("a", { id: "x-1" }), createEvent("a again", { id: "x-1" }), createEvent("b", { id: "x-2" }), createEvent("no id")]);
    expect(await k.process()).toBe("READY");
    expect(await storedBodies(stream)).toEqual(["a", "b", "no id"]);
  });

  needsNatsServer.test("a server that is down at start: the sink logs and retries, leaves events in the channel, and publishes once the server is up", async () => {
    const port = await freePort();
    const logger = new MemoryLogger();
    const stream = `K${process.pid}_${++streamNo}`;
    const { sink: k, channel } = sink({ stream, servers: `nats://127.0.0.1:${port}`, "reconnect-wait": "100" }, logger);
    k.start();
    await putAll(channel, events(3));
    await waitUntil(() => logger.lines.some((l) => l.level === "warn" && /jetstream sink k1: cannot use NATS at .*retrying every 100 ms/.test(l.message)), "retry log line");
    expect(await k.process()).toBe("BACKOFF");
    expect(channel.size).toBe(3);
    const late = await startNats({ port });
    try {
      await waitUntil(() => k.connected, "connected", 8000);
      expect(await k.process()).toBe("READY");
      expect(channel.size).toBe(0);
      expect(k.counter.values.EventDrainSuccessCount).toBe(3);
    } finally {
      await k.stop();
      await late.stop();
    }
  });
});

describe("jetstream sink, framing batch", () => {
  needsNatsServer.test("a taken batch goes in as few messages as max_payload allows; a batch resent after a failure reuses their ids, so nothing is stored twice", async () => {
    const tmp = tempDir();
    writeFileSync(`${tmp.dir}/small.conf`, "max_payload: 2048\n");
    const small = await startNats({ extra: ["-c", `${tmp.dir}/small.conf`] });
    try {
      const stream = `K${process.pid}_${++streamNo}`;
      const { sink: k, channel } = sink({ stream, servers: small.servers, framing: "batch", "batch-size": "30", "max-msgs": "1", retention: "limits" });
      await started(k);
      // 30 events of about 100 framed bytes: two messages under 2048 bytes; the stream takes one.
      const batch = Array.from({ length: 30 }, (_, i) => createEvent(`${i}`.padStart(90, "."), { n: String(i) }));
      await putAll(channel, batch);
      const err = await k.process().catch((e) => e);
      expect(err).toBeInstanceOf(EventDeliveryException);
      expect(channel.size).toBe(30);
      const c = await natsClient(small.servers);
      try {
        expect((await c.jsm.streams.info(stream)).state.messages).toBe(1);
        await c.jsm.streams.update(stream, { max_msgs: 100 });
        expect(await k.process()).toBe("READY");
        const info = await c.jsm.streams.info(stream);
        const got: string[] = [];
        for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
          const m = (await c.jsm.streams.getMessage(stream, { seq }))!;
          expect(m.header.get("Flume-Batch")).toBe("1");
          expect(m.data.length).toBeLessThanOrEqual(2048);
          got.push(...decodeBatch(m.data, "1").map((e) => e.headers.n));
        }
        // Each event once, in order, over the messages the first attempt and the resend stored.
        expect(got).toEqual(batch.map((_, i) => String(i)));
        expect(info.state.messages).toBeGreaterThanOrEqual(2);
      } finally {
        await c.close();
      }
    } finally {
      await Promise.all(open.splice(0).map((x) => x.stop()));
      await small.stop();
      tmp.cleanup();
    }
  });
});

describe("jetstream sink: bad input", () => {
  needsNatsServer.test("an event larger than the server's max_payload fails the batch at once with a clear error; the batch stays in the channel", async () => {
    const stream = `K${process.pid}_${++streamNo}`;
    // A publish-timeout far above the bound: "at once" is not the retries running out.
    const { sink: k, channel } = sink({ stream, "publish-timeout": "60000" });
    await started(k);
    await putAll(channel, [createEvent("small"), createEvent(new Uint8Array(2 * 1024 * 1024))]);
    const t0 = Date.now();
    const err = await k.process().catch((e) => e);
    expect(err).toBeInstanceOf(EventDeliveryException);
    expect(String(err.message)).toMatch(/event 1 of the batch .* of \d+ bytes does not fit in one NATS message: the server's max_payload is 1048576 bytes \(raise max_payload/);
    expect(Date.now() - t0).toBeLessThan(waitBound(3000));
    expect(channel.size).toBe(2);
  });
});
