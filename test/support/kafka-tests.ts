import path from "node:path";
/**
 * What the Kafka test files share: one broker (or cluster) per file, cleanups awaited after each
 * test, and the Kafka sink, source and channel built from their definitions, wired to started
 * memory channels, stopped after the test.
 */
import { afterAll, afterEach, beforeAll, expect } from "bun:test";
import { componentContext } from "../../src/components/component.ts";
import { definition as channelDefinition, type KafkaChannel } from "../../src/components/channels/kafka/index.ts";
import { definition as sinkDefinition, type KafkaSink } from "../../src/components/sinks/kafka.ts";
import { definition as sourceDefinition, type KafkaSource } from "../../src/components/sources/kafka.ts";
import type { Channel } from "../../src/core/channel.ts";
import type { Transaction } from "../../src/core/transaction.ts";
import { ChannelProcessor } from "../../src/core/channel-processor.ts";
import type { ComponentDefinition } from "../../src/components/component.ts";
import type { AnyOptions } from "../../src/config/schema.ts";
import { bodyText, type Event } from "../../src/core/event.ts";
import { type Logger, MemoryLogger } from "../../src/core/logger.ts";
import { MemoryChannel } from "../../src/core/memory-channel.ts";
import { ReplicatingChannelSelector } from "../../src/core/selectors.ts";
import { type FlumeOptions, type FlumePeer, startFlume } from "./flume.ts";
import { takeInto, takeOpen } from "./core.ts";
import { waitUntil } from "./helpers.ts";
import { FLUME_KAFKA } from "./jvm-artifacts.ts";
import { needsJvm, resolveClasspath } from "./jvm.ts";
import { type KafkaCluster, type KafkaOptions, startKafkaCluster } from "./kafka.ts";
import { freePort } from "./ports.ts";
import { type KafkaProxy, startKafkaProxy } from "./kafka-proxy.ts";
import type { Precondition } from "./requires.ts";

export interface FileKafkaOptions extends KafkaOptions {
  /** Nodes in the cluster: 1 by default. */
  size?: number;
  /** The precondition of the file's tests (needsJvm by default): no broker where it does not hold. */
  needs?: Precondition;
  /** Resolves Flume 1.11 with its Kafka jars (startFlumeWithKafka) in beforeAll too, so no test waits for mvn. */
  withFlumeKafka?: boolean;
  /** Runs in beforeAll before the broker starts (resolving another classpath, making certificates); may give more options. */
  before?(): Promise<KafkaOptions | void> | KafkaOptions | void;
}

/**
 * One broker (or cluster) for the tests of a file: started in beforeAll where the precondition
 * holds, stopped in afterAll. The object reads the started cluster, so tests use it as one.
 */
export function kafkaForFile(opts: FileKafkaOptions = {}): KafkaCluster {
  let cluster: KafkaCluster | null = null;
  const started = (): KafkaCluster => {
    if (!cluster) throw new Error("the file's Kafka broker did not start (see beforeAll)");
    return cluster;
  };
  beforeAll(async () => {
    if (!(opts.needs ?? needsJvm).holds) return;
    if (opts.withFlumeKafka) await resolveClasspath(FLUME_KAFKA);
    const more = await opts.before?.();
    cluster = await startKafkaCluster(opts.size ?? 1, { ...opts, ...more });
  }, 300_000);
  afterAll(async () => {
    await cluster?.stop();
  }, 60_000);
  return {
    get nodes() {
      return started().nodes;
    },
    get bootstrap() {
      return started().bootstrap;
    },
    get classpath() {
      return started().classpath;
    },
    createTopic: (topic, o) => started().createTopic(topic, o),
    newTopic: (o) => started().newTopic(o),
    leaderOf: (topic, partition) => started().leaderOf(topic, partition),
    coordinatorOf: (group) => started().coordinatorOf(group),
    stop: () => started().stop(),
  };
}

/**
 * The file's broker behind a proxy (kafka-proxy.ts) that makes network faults: the broker
 * advertises the proxy, so every client connection goes through it.
 */
export function kafkaForFileBehindProxy(opts: FileKafkaOptions = {}): { kafka: KafkaCluster; proxy: () => KafkaProxy } {
  let proxy: KafkaProxy | null = null;
  const kafka = kafkaForFile({
    ...opts,
    before: async () => {
      const [brokerPort, proxyPort] = [await freePort(), await freePort()];
      proxy = await startKafkaProxy(proxyPort, brokerPort);
      return { ports: [brokerPort], properties: { "advertised.listeners": `PLAINTEXT://127.0.0.1:${proxyPort}` } };
    },
  });
  afterAll(() => proxy?.close());
  return {
    kafka,
    proxy: () => {
      if (!proxy) throw new Error("the file's Kafka proxy did not start (see beforeAll)");
      return proxy;
    },
  };
}

/** Cleanups run after each test, last first, each awaited. */
export function cleanupsAfterEach(): (() => unknown)[] {
  const cleanups: (() => unknown)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  }, 60_000);
  return cleanups;
}

function parsed<T, O extends AnyOptions>(def: ComponentDefinition<T, O>, props: Record<string, string>): O {
  const { options, errors } = def.parse(props);
  const problems = [...errors, ...(def.validate?.(options) ?? [])];
  if (problems.length > 0) throw new Error(`${def.schema.type}: ${problems.map((p) => `${p.key}: ${p.message}`).join("; ")}`);
  return options;
}

export function memoryChannel(name: string, capacity = 10_000, transactionCapacity = 1000): MemoryChannel {
  const channel = new MemoryChannel(name, { capacity, transactionCapacity });
  channel.start();
  return channel;
}

export interface Built {
  /** The cleanups the component's stop goes to. */
  cleanups: (() => unknown)[];
  name?: string;
  logger?: Logger;
}

/** A Kafka sink (not started) taking from a started memory channel. */
export function kafkaSink(props: Record<string, string>, o: Built): { sink: KafkaSink; channel: MemoryChannel; logger: MemoryLogger } {
  const logger = (o.logger as MemoryLogger | undefined) ?? new MemoryLogger();
  const sink = sinkDefinition.create(parsed(sinkDefinition, props), componentContext(o.name ?? "k1", { logger }));
  const channel = memoryChannel(`${o.name ?? "k1"}-in`);
  sink.setChannel(channel);
  o.cleanups.push(() => sink.stop());
  return { sink, channel, logger };
}

/** Puts the events into the sink's channel, sends them as one batch and waits for the broker's acknowledgement. */
export async function sendAll(k: KafkaSink, channel: Channel, events: Event[]): Promise<void> {
  const before = k.counter.values.EventDrainSuccessCount;
  await putEvents(channel, events);
  expect(await k.process()).toBe("READY");
  await waitUntil(() => k.counter.values.EventDrainSuccessCount >= before + events.length, "the batch acknowledged", 60_000);
}

/** process() as the runner calls it until one fails (a batch's failure shows at the call after its send). */
export async function failureOf(k: KafkaSink): Promise<Error> {
  let failure: Error | null = null;
  await waitUntil(
    async () => {
      await k.process().catch((err: Error) => (failure = err));
      return failure !== null;
    },
    "a batch failing",
    10_000,
    100,
  );
  return failure!;
}

/** A Kafka source (not started) writing into `channel` (a started memory channel by default). */
export function kafkaSource(props: Record<string, string>, o: Built & { channel?: MemoryChannel }): { source: KafkaSource; channel: MemoryChannel; logger: MemoryLogger };
export function kafkaSource<C extends Channel>(props: Record<string, string>, o: Built & { channel: C }): { source: KafkaSource; channel: C; logger: MemoryLogger };
export function kafkaSource(props: Record<string, string>, o: Built & { channel?: Channel }): { source: KafkaSource; channel: Channel; logger: MemoryLogger } {
  const logger = (o.logger as MemoryLogger | undefined) ?? new MemoryLogger();
  const source = sourceDefinition.create(parsed(sourceDefinition, props), componentContext(o.name ?? "r1", { logger }));
  // A channel given is started here; one made here is started already.
  o.channel?.start();
  const channel = o.channel ?? memoryChannel(`${o.name ?? "r1"}-out`);
  const processor = new ChannelProcessor(new ReplicatingChannelSelector([channel]));
  processor.initialize();
  source.setChannelProcessor(processor);
  o.cleanups.push(() => source.stop());
  return { source, channel, logger };
}

/** A Kafka channel (not started). */
export function kafkaChannel(props: Record<string, string>, o: Built): KafkaChannel {
  const channel = channelDefinition.create(parsed(channelDefinition, props), componentContext(o.name ?? "kc", o.logger ? { logger: o.logger } : {}));
  o.cleanups.push(() => channel.stop());
  return channel;
}

/** Puts events into a channel in one committed transaction. */
export async function putEvents(channel: Channel, events: readonly Event[]): Promise<void> {
  const tx = channel.getTransaction();
  tx.begin();
  for (const e of events) tx.put(e);
  await tx.commit();
  tx.close();
}

/** Takes up to `max` events in one committed transaction, appending them to `into`. */
export async function takeEvents(channel: Channel, into: Event[] = [], max = 100_000): Promise<Event[]> {
  const tx = channel.getTransaction();
  tx.begin();
  for (let i = 0; i < max; i++) {
    const e = tx.take();
    if (!e) break;
    into.push(e);
  }
  await tx.commit();
  tx.close();
  return into;
}

/**
 * Bodies of 400 bytes, numbered from `from`: a put of 100 is one fetch response of 40 kB, one
 * the Kafka channel frees itself once its takes committed (response-release.ts: over 16 kB).
 */
export function largeBodies(n: number, from: number): string[] {
  return Array.from({ length: n }, (_, i) => `event-${String(from + i).padStart(4, "0")}-${"x".repeat(389)}`);
}

/** As takeOpen, taking on in the same transaction until n events were taken (as the consumer fetches them). */
export async function takeOpenAll<T extends Transaction>(channel: { getTransaction(): T }, n: number, ms = 60_000): Promise<{ tx: T; events: Event[] }> {
  const open = takeOpen(channel, n);
  await waitUntil(() => takeInto(open.tx, open.events, n).length === n, `${n} events taken in one transaction`, ms, 50);
  return open;
}

/** Runs the source's process() until `want` events are in its channel (or the bound passes). */
export async function pollChannel(r: KafkaSource, channel: Channel, want: number, got: Event[] = [], ms = 60_000): Promise<Event[]> {
  const deadline = Date.now() + ms;
  while (got.length < want && Date.now() < deadline) {
    // As the source runner: a BACKOFF waits (and lets the client's I/O run).
    if ((await r.process()) === "BACKOFF") await new Promise((resolve) => setTimeout(resolve, 50));
    got.push(...(await takeEvents(channel)));
  }
  return got;
}

/** The offset a consumer group committed for a topic's partition, as the brokers have it (-1: none). */
export async function committedOffset(bootstrap: string, group: string, topic: string, partition = 0): Promise<number> {
  const { Admin } = await import("@platformatic/kafka");
  const admin = new Admin({ clientId: "committed-offset", bootstrapBrokers: bootstrap.split(",") });
  try {
    const [answer] = await admin.listConsumerGroupOffsets({ groups: [group] });
    const p = answer?.topics.find((t) => t.name === topic)?.partitions.find((x) => x.partitionIndex === partition);
    return p ? Number(p.committedOffset) : -1;
  } finally {
    await admin.close();
  }
}

/** Every body in a topic, in offset order, read by our source (a new group) until nothing new came for quietMs. */
export async function readTopic(bootstrap: string, topic: string, quietMs = 8000): Promise<string[]> {
  const { source: r, channel } = kafkaSource(
    { "kafka.bootstrap.servers": bootstrap, "kafka.topics": topic, "kafka.consumer.group.id": `check-${topic}-${Date.now()}`, "kafka.consumer.auto.offset.reset": "earliest", batchDurationMillis: "200" },
    { cleanups: [], name: "check", channel: new MemoryChannel("check", { capacity: 200_000, transactionCapacity: 10_000 }) },
  );
  await r.start();
  const out: string[] = [];
  let last = Date.now();
  try {
    while (Date.now() - last < quietMs) {
      if ((await r.process()) === "BACKOFF") await new Promise((resolve) => setTimeout(resolve, 20));
      const batch = await takeEvents(channel);
      for (const e of batch) out.push(bodyText(e));
      if (batch.length > 0) last = Date.now();
    }
  } finally {
    await r.stop();
  }
  return out;
}

/** seq -> file channel (in dir) -> kafka sink (acks=all): the agent the sink's fault e2e tests kill brokers under; `producer` adds kafka.producer.* settings. */
export function seqFileKafkaConf(o: { dir: string; bootstrap: string; topic: string; total: number; batch: number; producer: Readonly<Record<string, string | number>> }): string {
  const producer = Object.entries(o.producer).map(([k, v]) => `a1.sinks.k1.kafka.producer.${k} = ${v}\n`).join("");
  return `a1.sources = r1
a1.channels = c1
a1.sinks = k1
a1.sources.r1.type = seq
a1.sources.r1.totalEvents = ${o.total}
a1.sources.r1.batchSize = 500
a1.sources.r1.channels = c1
a1.channels.c1.type = file
a1.channels.c1.checkpointDir = ${path.join(o.dir, "checkpoint")}
a1.channels.c1.dataDirs = ${path.join(o.dir, "data")}
a1.channels.c1.transactionCapacity = 1000
a1.sinks.k1.type = kafka
a1.sinks.k1.channel = c1
a1.sinks.k1.kafka.bootstrap.servers = ${o.bootstrap}
a1.sinks.k1.kafka.topic = ${o.topic}
a1.sinks.k1.flumeBatchSize = ${o.batch}
a1.sinks.k1.kafka.producer.acks = all
${producer}`;
}

/** Apache Flume 1.11 with its Kafka components, running `conf` (agent a1) until the test ends; `more`: other options of startFlume. */
export async function startFlumeWithKafka(cleanups: (() => unknown)[], conf: string, more: Omit<FlumeOptions, "conf"> = {}): Promise<FlumePeer> {
  const peer = await startFlume({ readyTimeoutMs: 120_000, ...more, conf, extraSets: [FLUME_KAFKA, ...(more.extraSets ?? [])] });
  cleanups.push(() => peer.stop());
  return peer;
}
