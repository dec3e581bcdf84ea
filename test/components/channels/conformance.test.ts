// Every channel type the registry knows passes the channel contract (conformance.ts): a channel
// added later is covered without touching this file. A type that needs more than scratch
// directories to run (a server, say) gets its setup in SETUP below, or the suite fails for it.
// Limits are set through the schema roles (capacity, transactionCapacity, keepAlive), whatever
// the type calls those properties.
import { componentContext } from "../../../src/components/component.ts";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Channel } from "../../../src/core/channel.ts";
import { createEvent } from "../../../src/core/event.ts";
import { type Logger, silentLogger } from "../../../src/core/logger.ts";
import { VirtualClock } from "../../../src/core/virtual-clock.ts";
import type { ComponentDefinition } from "../../../src/components/component.ts";
import { allComponents } from "../../../src/components/registry.ts";
import { capacityOf, keysWithRole, keyWithRole } from "../../../src/config/schema.ts";
import { needsJvm } from "../../support/jvm.ts";
import { type KafkaCluster, startKafka } from "../../support/kafka.ts";
import { type NatsSetup, startNats } from "../../support/nats.ts";
import { needsNatsServer, type Precondition } from "../../support/requires.ts";
import { type ChannelUnderTest, checkChannelContract, coverage, type Limits } from "./conformance.ts";
import { waitBound } from "../../support/helpers.ts";

/** What a channel type needs beyond its limits and scratch directories to run here, and why. */
interface TypeSetup {
  /** A precondition of the machine (a server binary): the type's tests name it, skip without it, fail under CI=true. */
  needs?: Precondition;
  before?(): Promise<void>;
  after?(): Promise<void>;
  /** Properties for one channel under test (fresh for each, kept across its restarts). */
  props?(): Record<string, string>;
  /** Waits, in real time, until a channel just started (holding `held` events when reopened) can be used as the contract uses it. */
  ready?(channel: Channel, clock: VirtualClock, held: number): Promise<void>;
  /** Schedules to run when fewer than the default, from a fixed seed when given (with the reason). */
  runs?: { n: number; seed?: number; why: string };
  /** The suite runs once per variant (named, with properties of its own) instead of once. */
  variants?: Record<string, Record<string, string>>;
  /** Whether the runs bring committed, taken events back after a restart (declared by the channel), per variant. */
  repeats?(variant: Record<string, string>): boolean;
  /** Bound of the random-interleavings test, when more than the default. */
  timeout?: number;
}

/**
 * Waits until a condition holds, in real time (a server's own pace), or fails naming it.
 * `meanwhile` runs every poll (e.g. moves the channel's virtual clock on).
 */
async function realTimeUntil(ok: () => boolean, what: string, ms: number, meanwhile?: () => Promise<void>): Promise<void> {
  const bound = waitBound(ms);
  const deadline = Date.now() + bound;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`${what} within ${bound} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
    await meanwhile?.();
  }
}

let nats: NatsSetup | null = null;
let streams = 0;
let kafka: KafkaCluster | null = null;
let topics = 0;

const SETUP: Record<string, TypeSetup> = {
  // SPILLABLEMEMORY waits overflowTimeout seconds for room in memory before it spills a commit
  // to its overflow, a wait the model does not know: 0 spills at once
  // (test/components/channels/spillable-memory/ covers the wait).
  SPILLABLEMEMORY: { props: () => ({ overflowTimeout: "0" }) },
  // A real nats-server, one stream per channel under test; the contract holds for a channel
  // that is its consumer's only user. Takes are served from the prefetch (take() never waits),
  // so the prefetch covers the largest capacity the suite uses: every committed event is there
  // to take. A channel is ready once connected with its prefetch holding what the server has
  // for it; after a crash that is when ack-wait (1 s, the least allowed) has passed and the
  // server delivers the dead instance's events again.
  jetstream: {
    needs: needsNatsServer,
    async before() {
      nats = await startNats();
    },
    async after() {
      await nats?.stop();
    },
    props: () => ({ servers: nats?.servers ?? "", stream: `conformance_${process.pid}_${++streams}`, "ack-wait": "1000", prefetch: "100", "reconnect-wait": "100" }),
    async ready(channel, clock) {
      const ch = channel as Channel & { connected: boolean };
      // A first attempt to connect or to pull can fail (the server still setting up JetStream,
      // heartbeats of a pull missed while the previous instance's pull expires); the retry waits
      // on the channel's clock, the virtual one here, which nothing else moves while a channel opens.
      await realTimeUntil(() => ch.connected, "the jetstream channel did not connect", 30_000, () => clock.advance(20));
      await realTimeUntil(() => !ch.ioBusy?.(), "the jetstream channel did not receive what the server holds for it", 30_000, () => clock.advance(20));
    },
    // A clean stop waits for the pull in flight to expire (1 s) before handing events back, and
    // a crash for ack-wait: a schedule costs about 2 s, so a fixed set of 8 that reaches every
    // case the test checks for (coverage below) instead of 200 random ones.
    runs: { n: 8, seed: 2, why: "each schedule waits on the server's clock" },
    // Both framings: batch messages (the default, acknowledged once every event in them is
    // committed) and one message per event.
    variants: { "framing batch": { framing: "batch" }, "framing event": { framing: "event" } },
    repeats: (variant) => variant.framing === "batch",
  },
  // A real Kafka broker (it creates the topics on use), one topic and consumer group per channel
  // under test; the contract holds for a channel that is its topic's only reader. A crashed
  // member holds its partition until its session expires: short sessions (the broker allows
  // them) keep a crash to about a second. A channel is ready once connected with what the topic
  // holds for its group fetched; commits taken out of order leave records above the group's
  // offset, which a restart delivers again as the channel declares.
  "org.apache.flume.channel.kafka.KafkaChannel": {
    needs: needsJvm,
    async before() {
      kafka = await startKafka({ properties: { "group.min.session.timeout.ms": "500", "group.initial.rebalance.delay.ms": "0" } });
    },
    async after() {
      await kafka?.stop();
    },
    props: () => {
      const n = ++topics;
      return {
        "kafka.bootstrap.servers": kafka?.bootstrap ?? "",
        "kafka.topic": `conformance-${process.pid}-${n}`,
        "kafka.consumer.group.id": `conformance-${n}`,
        "kafka.pollTimeout": "20",
        "kafka.consumer.session.timeout.ms": "1000",
        "kafka.consumer.heartbeat.interval.ms": "200",
      };
    },
    async ready(channel, _clock, held) {
      const ch = channel as Channel & { connected: boolean };
      await realTimeUntil(() => ch.connected, "the kafka channel did not connect", 60_000);
      await realTimeUntil(() => ch.counter.values.ChannelSize >= held, `the kafka channel did not fetch the ${held} events its topic holds for its group`, 60_000);
    },
    // Each schedule creates a topic and joins a group, each crash waits out a session: a fixed
    // set of schedules that reaches every case the test checks for.
    runs: { n: 30, seed: 7, why: "each schedule joins a consumer group on a live broker" },
    repeats: () => true,
    timeout: 280_000,
  },
};

/** Per-type runs: a durable channel does real I/O per commit, so it gets fewer. */
const RUNS = (def: ComponentDefinition<unknown>) => SETUP[def.schema.type]?.runs?.n ?? (def.durability ? 200 : 1000);

/** Splits a capacity over several capacity properties (they add up), as Limits.split says. */
function splitCapacity(capacity: number, parts: number, split = 0.5): number[] {
  if (parts === 1) return [capacity];
  const first = Math.round(capacity * split);
  const rest = capacity - first;
  return [first, ...Array.from({ length: parts - 1 }, (_, i) => Math.floor(rest / (parts - 1)) + (i < rest % (parts - 1) ? 1 : 0))];
}

/** The key of the property with a role; the suite cannot run a channel without one. */
function roleKey(def: ComponentDefinition<unknown>, role: "transactionCapacity" | "keepAlive"): string {
  const key = keyWithRole(def.schema, role);
  if (!key) throw new Error(`channel type ${def.schema.type} has no property with the ${role} role, which the conformance suite sets`);
  return key;
}

function underTest(def: ComponentDefinition<unknown>, variant: Record<string, string> = {}): ChannelUnderTest {
  const dir = mkdtempSync(path.join(os.tmpdir(), `flume-conformance-${def.schema.type}-`));
  const setup = SETUP[def.schema.type];
  const raw: Record<string, string> = {};
  // Storage goes into the scratch directory: every path-typed property with a default (which
  // would otherwise point into the user's home) gets a folder of its own.
  for (const p of def.schema.props) if (p.type === "path" && p.default !== undefined) raw[p.key] = path.join(dir, p.key);
  Object.assign(raw, setup?.props?.(), variant);
  const capacityKeys = keysWithRole(def.schema, "capacity");
  const unbounded = def.unbounded !== undefined;
  if (capacityKeys.length === 0 && !unbounded) throw new Error(`channel type ${def.schema.type} has no property with the capacity role, which the conformance suite sets`);
  const lostOnCrash = def.durability?.lostOnCrash;
  const lostOnStop = def.durability?.lostOnStop;
  const repeatedOnCrash = def.durability?.repeatedOnCrash;
  const repeatedOnStop = def.durability?.repeatedOnStop;
  return {
    type: def.schema.type,
    survivesCrash: def.durability !== undefined,
    unbounded,
    lostOnCrash: lostOnCrash && ((channel: Channel) => lostOnCrash(channel)),
    lostOnStop: lostOnStop && ((channel: Channel) => lostOnStop(channel)),
    repeatedOnCrash: repeatedOnCrash && ((channel: Channel) => repeatedOnCrash(channel)),
    repeatedOnStop: repeatedOnStop && ((channel: Channel) => repeatedOnStop(channel)),
    async open(limits: Limits, clock: VirtualClock, held = 0): Promise<Channel> {
      const props = { ...raw, [roleKey(def, "transactionCapacity")]: String(limits.transactionCapacity) };
      // A channel without a capacity has no room to wait for either.
      if (!unbounded) {
        props[roleKey(def, "keepAlive")] = String(limits.keepAlive);
        splitCapacity(limits.capacity, capacityKeys.length, limits.split).forEach((n, i) => (props[capacityKeys[i]] = String(n)));
      }
      const { options: config, errors } = def.parse(props);
      expect(errors).toEqual([]);
      if (!unbounded) expect(capacityOf(def.schema, config)).toBe(limits.capacity);
      const channel = def.create(config, componentContext("c1", { agentName: "a1", clock, logger: channelLogger })) as Channel;
      await channel.start();
      await setup?.ready?.(channel, clock, held);
      return channel;
    },
    async crash(channel: Channel): Promise<void> {
      await def.durability?.crash(channel);
    },
    dispose() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** FC_LOG=1 prints what the channels under test log (with a millisecond clock), to follow a failing run. */
const channelLogger: Logger = process.env.FC_LOG
  ? Object.fromEntries((["debug", "info", "warn", "error"] as const).map((level) => [level, (m: string) => console.error(`${Date.now() % 1e6} ${level} ${m}`)])) as unknown as Logger
  : silentLogger;

const channelTypes = allComponents().filter((d) => d.schema.kind === "channel" && d.schema.type !== "embedded");

describe("channel conformance", () => {
  test("the registry has channel types to check", () => {
    expect(channelTypes.map((d) => d.schema.type)).toEqual(expect.arrayContaining(["memory", "file"]));
  });

  for (const def of channelTypes) {
    const setup = SETUP[def.schema.type];
    const needs = setup?.needs;
    // A type with a precondition declares its tests through it (named, skipped or failing under CI).
    const typeTest = (name: string, body: () => Promise<void>, timeout?: number) => (needs ? needs.test(name, body, timeout) : test(name, body, timeout));
    for (const [variantName, variant] of Object.entries(setup?.variants ?? { "": {} })) describe(`${def.schema.type} channel${variantName ? ` (${variantName})` : ""}`, () => {
      // A server started from jars (a Kafka broker) may take a minute on a loaded machine.
      beforeAll(async () => {
        if (needs?.holds !== false) await setup?.before?.();
      }, 300_000);
      afterAll(async () => {
        if (needs?.holds !== false) await setup?.after?.();
      }, 60_000);
      typeTest(`random interleavings of transactions keep the channel contract${def.durability ? ", across clean restarts and crashes" : ""}`, async () => {
        const before = { ...coverage };
        await checkChannelContract(() => underTest(def, variant), { runs: RUNS(def), seed: setup?.runs?.seed });
        const seen = Object.fromEntries(Object.entries(coverage).map(([k, v]) => [k, v - before[k as keyof typeof coverage]]));
        // The runs reached the cases the contract is about (waiting for room: where there is a capacity).
        const waits = def.unbounded === undefined ? ["commitWaited", "commitServedAfterWait", "commitFull"] : [];
        for (const k of [...waits, "putListFull", "takeListFull", "takeEmpty", "rollbackTakes", "stateErrors", "batches"]) {
          expect({ [k]: seen[k] > 0 }).toEqual({ [k]: true });
        }
        // A durable type went through clean restarts and crashes; the others are never restarted.
        const durable = def.durability !== undefined;
        expect({ restarts: seen.restarts > 0, crashes: seen.crashes > 0 }).toEqual({ restarts: durable, crashes: durable });
        // A channel keeping part of its events through a crash lost some and kept some; no other counts any.
        const partial = def.durability?.lostOnCrash !== undefined;
        expect({ lost: seen.crashLostEvents > 0, kept: seen.crashKeptEvents > 0 }).toEqual({ lost: partial, kept: partial });
        // Committed events a restart delivers again (declared by the channel) came back where the type has them; nothing else repeats.
        expect({ repeated: seen.repeatedEvents > 0 }).toEqual({ repeated: setup?.repeats?.(variant) ?? false });
      }, setup?.timeout ?? 120_000);

      // Waiting for room needs a capacity.
      if (def.unbounded !== undefined) return;
      typeTest("two commits waiting for room in a full channel: one take frees room for one of them, never more than capacity", async () => {
        const cut = underTest(def, variant);
        const clock = new VirtualClock(1_000_000);
        const ch = await cut.open({ capacity: 10, transactionCapacity: 5, keepAlive: 3 }, clock);
        const settle = async () => {
          for (let i = 0; i < 1000 && (i < 3 || ch.ioBusy?.()); i++) await clock.flush();
        };
        try {
          const putBatch = (from: number) => {
            const tx = ch.getTransaction();
            tx.begin();
            for (let i = 0; i < 5; i++) tx.put(createEvent(`e${from + i}`));
            return tx;
          };
          for (const from of [0, 5]) {
            const tx = putBatch(from);
            await tx.commit();
            tx.close();
          }
          const a = putBatch(10);
          const b = putBatch(15);
          const results: string[] = [];
          const pa = a.commit().then(() => results.push("a ok"), (e: Error) => results.push(`a ${e.name}`));
          const pb = b.commit().then(() => results.push("b ok"), (e: Error) => results.push(`b ${e.name}`));
          await settle();
          expect(results).toEqual([]);
          const take = ch.getTransaction();
          take.begin();
          for (let i = 0; i < 5; i++) expect(take.take()).not.toBeNull();
          await take.commit();
          take.close();
          await settle();
          // The first in line got the room; the second still waits.
          expect(results).toEqual(["a ok"]);
          expect(ch.counter.values.ChannelSize).toBe(10);
          await clock.advance(3001);
          await settle();
          await Promise.all([pa, pb]);
          expect(results).toEqual(["a ok", "b ChannelFullException"]);
          await b.rollback();
          expect(ch.counter.values.ChannelSize).toBe(10);
        } finally {
          await ch.stop();
          cut.dispose();
        }
      }, 60_000);
    });
  }
});
