import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { lookupComponent } from "../../../src/components/registry.ts";
import { definition, type JetStreamSource } from "../../../src/components/sources/jetstream.ts";
import { definition as sinkDefinition } from "../../../src/components/sinks/jetstream.ts";
import { createEvent } from "../../../src/core/event.ts";
import { componentContext } from "../../../src/components/component.ts";
import { ChannelProcessor } from "../../../src/core/channel-processor.ts";

import { MemoryLogger } from "../../../src/core/logger.ts";
import { MemoryChannel } from "../../../src/core/memory-channel.ts";
import { ReplicatingChannelSelector } from "../../../src/core/selectors.ts";
import { freePort, waitBound, waitUntil } from "../../support/helpers.ts";
import { takeAll } from "../../core/support.ts";
import { natsClient, type NatsSetup, startNats } from "../../support/nats.ts";
import { needsNatsServer } from "../../support/requires.ts";

let server: NatsSetup;
let streamNo = 0;
const open: JetStreamSource[] = [];

function source(props: Record<string, string>, channel = new MemoryChannel("c1", { capacity: 1000, transactionCapacity: 1000 }), logger = new MemoryLogger(), name = "r1") {
  const { options, errors } = definition.parse({ servers: server.servers, "ack-wait": "2000", batchDurationMillis: "100", ...props });
  expect(errors).toEqual([]);
  expect(definition.validate?.(options) ?? []).toEqual([]);
  const r = definition.create(options, componentContext(name, { logger }));
  channel.start();
  const processor = new ChannelProcessor(new ReplicatingChannelSelector([channel]));
  processor.initialize();
  r.setChannelProcessor(processor);
  open.push(r);
  return { source: r, channel };
}

async function started(r: JetStreamSource): Promise<JetStreamSource> {
  r.start();
  await waitUntil(() => r.connected, "source connected", 8000);
  return r;
}

/** Publishes n events on the stream's subject with a plain NATS client (as another agent's sink would). */
async function publish(stream: string, n: number, from = 0): Promise<void> {
  const c = await natsClient(server.servers);
  try {
    for (let i = from; i < from + n; i++) {
      const h = c.headers();
      h.set("seq", String(i));
      await c.js.publish(`flume.${stream}`, new TextEncoder().encode(`event ${i}`), { headers: h, msgID: `${stream}-${i}` });
    }
  } finally {
    await c.close();
  }
}

async function consumerState(stream: string, consumer = "flume"): Promise<{ pending: number; ackPending: number }> {
  const c = await natsClient(server.servers);
  try {
    const info = await c.jsm.consumers.info(stream, consumer);
    return { pending: info.num_pending, ackPending: info.num_ack_pending };
  } finally {
    await c.close();
  }
}

beforeAll(async () => {
  if (needsNatsServer.holds) server = await startNats();
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((r) => r.stop()));
});
afterAll(async () => {
  await server?.stop();
});

test("type jetstream resolves to the source, a pollable source with Flume's Kafka source batch defaults", () => {
  expect(lookupComponent("source", "jetstream")).toBe(definition);
  const defaults = Object.fromEntries(definition.schema.props.map((p) => [p.key, p.default]));
  expect(defaults).toMatchObject({ batchSize: 1000, batchDurationMillis: 1000, consumer: "flume" });
});

describe("jetstream source on a real nats-server", () => {
  needsNatsServer.test("hands batches to the channel and acks them only after the channel committed", async () => {
    const stream = `R${process.pid}_${++streamNo}`;
    const { source: r, channel } = source({ stream, batchSize: "10" });
    await started(r);
    await publish(stream, 25);
    await waitUntil(async () => (await r.process()) === "READY" && channel.size >= 25, "25 events in the channel", 5000);
    const bodies = await takeAll(channel);
    expect(bodies).toEqual(Array.from({ length: 25 }, (_, i) => `event ${i}`));
    expect(await consumerState(stream)).toEqual({ pending: 0, ackPending: 0 });
    expect(r.counter.values).toMatchObject({ EventReceivedCount: 25, EventAcceptedCount: 25, AppendBatchAcceptedCount: 3, ChannelWriteFail: 0 });
  });

  needsNatsServer.test("a channel that refuses the batch: nothing is acked, the events come again and none is lost", async () => {
    const stream = `R${process.pid}_${++streamNo}`;
    const small = new MemoryChannel("c1", { capacity: 5, transactionCapacity: 5, keepAlive: 0 });
    const { source: r, channel } = source({ stream, batchSize: "5" }, small);
    await started(r);
    await publish(stream, 10);
    await waitUntil(async () => (await r.process(), channel.size === 5), "first batch in the channel", 5000);
    expect(await r.process()).toBe("BACKOFF");
    expect(r.counter.values.ChannelWriteFail).toBe(1);
    // Five stored in the channel and acked; the refused five are not acked.
    expect(await consumerState(stream)).toMatchObject({ ackPending: 5 });
    const got = await takeAll(channel, 5);
    await waitUntil(async () => (await r.process(), channel.size === 5), "second batch in the channel", 5000);
    got.push(...(await takeAll(channel, 5)));
    expect(got.sort()).toEqual(Array.from({ length: 10 }, (_, i) => `event ${i}`).sort());
    await waitUntil(async () => (await consumerState(stream)).ackPending === 0, "all acked", 3000);
  });

  needsNatsServer.test("reads batch messages (a jetstream sink's framing batch) and plain ones alike; a batch message is acked once all its events are in the channel; an unreadable one is dropped with an error naming it", async () => {
    const stream = `R${process.pid}_${++streamNo}`;
    const logger = new MemoryLogger();
    const { source: r, channel } = source({ stream, batchSize: "10" }, undefined, logger);
    await started(r);
    // 25 events in one batch message, as the sink with framing = batch publishes them.
    const { options } = sinkDefinition.parse({ servers: server.servers, stream, framing: "batch", "batch-size": "100" });
    const k = sinkDefinition.create(options, componentContext("k1"));
    const upstream = new MemoryChannel("u", { capacity: 100, transactionCapacity: 100 });
    upstream.start();
    k.setChannel(upstream);
    const tx = upstream.getTransaction();
    tx.begin();
    for (let i = 0; i < 25; i++) tx.put(createEvent(`event ${i}`, { seq: String(i) }));
    await tx.commit();
    tx.close();
    k.start();
    try {
      await waitUntil(async () => (await k.process()) === "READY", "sink published", 5000);
    } finally {
      await k.stop();
    }
    const c = await natsClient(server.servers);
    try {
      const bad = c.headers();
      bad.set("Flume-Batch", "1");
      await c.js.publish(`flume.${stream}`, new Uint8Array([0, 0, 0, 9, 0]), { headers: bad });
    } finally {
      await c.close();
    }
    await publish(stream, 1, 25);
    expect((await consumerState(stream)).pending + (await consumerState(stream)).ackPending).toBe(3);
    // Two batches of 10 from the batch message: it is not acked yet.
    await waitUntil(async () => (await r.process(), channel.size >= 20), "20 events in the channel", 5000);
    expect(channel.size).toBe(20);
    const stored = async () => {
      const c = await natsClient(server.servers);
      try {
        return (await c.jsm.streams.info(stream)).state.messages;
      } finally {
        await c.close();
      }
    };
    // A work queue removes a message once acked: the batch message is still there.
    expect(await stored()).toBe(3);
    await waitUntil(async () => (await r.process(), channel.size === 26), "26 events in the channel", 5000);
    expect(await takeAll(channel)).toEqual(Array.from({ length: 26 }, (_, i) => `event ${i}`));
    await waitUntil(async () => (await stored()) === 0, "all acked or dropped", 3000);
    expect(logger.lines.some((l) => l.level === "error" && new RegExp(`message 2 of stream ${stream} is not readable and is dropped: a Flume-Batch message of 5 bytes is truncated`).test(l.message))).toBe(true);
  });

  needsNatsServer.test("two sources on one durable consumer share the events: each is delivered once", async () => {
    const stream = `R${process.pid}_${++streamNo}`;
    const a = source({ stream, batchSize: "20" }, undefined, new MemoryLogger(), "ra");
    const b = source({ stream, batchSize: "20" }, undefined, new MemoryLogger(), "rb");
    await started(a.source);
    await started(b.source);
    await publish(stream, 200);
    const pump = async (s: JetStreamSource) => {
      const until = Date.now() + waitBound(3000);
      while (Date.now() < until && a.channel.size + b.channel.size < 200) await s.process();
    };
    await Promise.all([pump(a.source), pump(b.source)]);
    const all = [...(await takeAll(a.channel)), ...(await takeAll(b.channel))];
    expect(all.length).toBe(200);
    expect(new Set(all).size).toBe(200);
  });

  needsNatsServer.test("a server that is down at start: the source logs and retries, and pulls once the server is up", async () => {
    const port = await freePort();
    const logger = new MemoryLogger();
    const stream = `R${process.pid}_${++streamNo}`;
    const { source: r, channel } = source({ stream, servers: `nats://127.0.0.1:${port}`, "reconnect-wait": "100" }, undefined, logger);
    r.start();
    await waitUntil(() => logger.lines.some((l) => l.level === "warn" && /jetstream source r1: cannot use NATS at .*retrying/.test(l.message)), "retry log line");
    expect(await r.process()).toBe("BACKOFF");
    const late = await startNats({ port });
    try {
      await waitUntil(() => r.connected, "connected", 8000);
      const c = await natsClient(late.servers);
      await c.js.publish(`flume.${stream}`, new TextEncoder().encode("late"));
      await c.close();
      await waitUntil(async () => (await r.process(), channel.size === 1), "event in the channel", 5000);
      expect(await takeAll(channel)).toEqual(["late"]);
    } finally {
      await r.stop();
      await late.stop();
    }
  });
});


