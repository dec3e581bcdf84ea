// Channel selectors: replicating, multiplexing and load_balancing (Flume's
// TestReplicatingChannelSelector, TestMultiplexingChannelSelector, TestLoadBalancingChannelSelector).
import { beforeEach, describe, expect, test } from "bun:test";
import type { Channel } from "../../src/core/channel.ts";
import { ConfigurationError } from "../../src/core/errors.ts";
import { createEvent } from "../../src/core/event.ts";
import { MemoryChannel } from "../../src/core/memory-channel.ts";
import {
  DEFAULT_MULTIPLEXING_HEADER,
  LoadBalancingChannelSelector,
  MultiplexingChannelSelector,
  type ChannelSelector,
  type MultiplexingOptions,
  ReplicatingChannelSelector,
} from "../../src/core/selectors.ts";

const names = (list: readonly Channel[]) => list.map((c) => c.name);
const withHeader = (value: string | undefined, header = "myheader") => createEvent("e", value === undefined ? {} : { [header]: value });

describe("replicating selector", () => {
  let channels: Channel[];
  beforeEach(() => {
    channels = ["ch1", "ch2", "ch3", "ch4"].map((n) => new MemoryChannel(n));
  });

  test("every channel is required, in configured order; none optional", () => {
    const s: ChannelSelector = new ReplicatingChannelSelector(channels);
    expect(names(s.getRequiredChannels(createEvent("e")))).toEqual(["ch1", "ch2", "ch3", "ch4"]);
    expect(s.getOptionalChannels(createEvent("e"))).toEqual([]);
    expect(s.fixedRouting()).toEqual({ required: channels, optional: [] });
  });

  test("a channel named in optional moves from required to optional", () => {
    const s: ChannelSelector = new ReplicatingChannelSelector(channels, ["ch1"]);
    expect(names(s.getRequiredChannels(createEvent("e")))).toEqual(["ch2", "ch3", "ch4"]);
    expect(names(s.getOptionalChannels(createEvent("e")))).toEqual(["ch1"]);
  });

  test("several optional channels keep their order", () => {
    const s: ChannelSelector = new ReplicatingChannelSelector(channels, ["ch1", "ch4"]);
    expect(names(s.getRequiredChannels(createEvent("e")))).toEqual(["ch2", "ch3"]);
    expect(names(s.getOptionalChannels(createEvent("e")))).toEqual(["ch1", "ch4"]);
  });

  test("a channel listed twice in optional is optional once", () => {
    const s: ChannelSelector = new ReplicatingChannelSelector(channels, ["ch1", "ch4", "ch1"]);
    expect(names(s.getRequiredChannels(createEvent("e")))).toEqual(["ch2", "ch3"]);
    expect(names(s.getOptionalChannels(createEvent("e")))).toEqual(["ch1", "ch4"]);
  });

  test("an optional name that is not one of the source's channels is a configuration error naming the key", () => {
    let err: unknown;
    try {
      new ReplicatingChannelSelector(channels, ["nope"]);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigurationError);
    expect((err as ConfigurationError).key).toBe("selector.optional");
    expect((err as Error).message).toContain('"nope"');
  });
});

describe("multiplexing selector", () => {
  let channels: Channel[];
  const optional = { foo: ["ch2", "ch3"], xyz: ["ch1", "ch3"], zebra: ["ch1", "ch2"] };
  const make = (o: Omit<MultiplexingOptions, "header">) => new MultiplexingChannelSelector(channels, { header: "myheader", ...o });
  beforeEach(() => {
    channels = ["ch1", "ch2", "ch3"].map((n) => new MemoryChannel(n));
  });

  test("routes on the header: mapping.<value> required, optional.<value> minus the required ones optional", () => {
    const s = make({ mapping: { foo: ["ch1", "ch2"], bar: ["ch2", "ch3"], xyz: ["ch1", "ch2", "ch3"] }, default: ["ch1", "ch3"], optional });
    expect(s.type).toBe("multiplexing");
    expect(names(s.getRequiredChannels(withHeader("foo")))).toEqual(["ch1", "ch2"]);
    expect(names(s.getOptionalChannels(withHeader("foo")))).toEqual(["ch3"]);
    expect(names(s.getRequiredChannels(withHeader("bar")))).toEqual(["ch2", "ch3"]);
    expect(s.getOptionalChannels(withHeader("bar"))).toEqual([]);
    expect(names(s.getRequiredChannels(withHeader("xyz")))).toEqual(["ch1", "ch2", "ch3"]);
    expect(s.getOptionalChannels(withHeader("xyz"))).toEqual([]);
    expect(s.fixedRouting()).toBeNull();
  });

  test("a missing, blank, other or unmapped header goes to the default channels", () => {
    const s = make({ mapping: { foo: ["ch1", "ch2"], bar: ["ch2", "ch3"], xyz: ["ch1", "ch2", "ch3"] }, default: ["ch1", "ch3"], optional });
    for (const e of [withHeader(undefined), withHeader("foo", "someheader"), withHeader("bar1"), withHeader("  ")]) {
      expect(names(s.getRequiredChannels(e))).toEqual(["ch1", "ch3"]);
      expect(s.getOptionalChannels(e)).toEqual([]);
    }
    // zebra has no mapping: default is required, and ch1 (a default) is dropped from its optional list.
    expect(names(s.getRequiredChannels(withHeader("zebra")))).toEqual(["ch1", "ch3"]);
    expect(names(s.getOptionalChannels(withHeader("zebra")))).toEqual(["ch2"]);
    expect(names(s.getAllChannels())).toEqual(["ch1", "ch2", "ch3"]);
  });

  test("without a default, mapped values route as configured and optional-only values have optional channels", () => {
    const s = make({ mapping: { foo: ["ch1", "ch2"], bar: ["ch2", "ch3"], xyz: ["ch1", "ch2", "ch3"], zebra: ["ch2"] }, optional: { ...optional, zebra: ["ch1", "ch3"] } });
    expect(names(s.getRequiredChannels(withHeader("foo")))).toEqual(["ch1", "ch2"]);
    expect(names(s.getOptionalChannels(withHeader("foo")))).toEqual(["ch3"]);
    expect(names(s.getRequiredChannels(withHeader("zebra")))).toEqual(["ch2"]);
    expect(names(s.getOptionalChannels(withHeader("zebra")))).toEqual(["ch1", "ch3"]);
    expect(s.getRequiredChannels(withHeader("unknown"))).toEqual([]);
  });

  test("with no mapping at all, default is required and optional channels exclude it", () => {
    const s = make({ mapping: {}, default: ["ch3"], optional: { foo: ["ch1", "ch2"], zebra: ["ch2", "ch3"] } });
    expect(names(s.getRequiredChannels(withHeader("foo")))).toEqual(["ch3"]);
    expect(names(s.getOptionalChannels(withHeader("foo")))).toEqual(["ch1", "ch2"]);
    expect(names(s.getRequiredChannels(withHeader("zebra")))).toEqual(["ch3"]);
    expect(names(s.getOptionalChannels(withHeader("zebra")))).toEqual(["ch2"]);
  });

  test("with only optional channels, nothing is required", () => {
    const s = make({ mapping: {}, optional: { foo: ["ch1", "ch2"], zebra: ["ch2", "ch3"] } });
    expect(s.getRequiredChannels(withHeader("foo"))).toEqual([]);
    expect(names(s.getOptionalChannels(withHeader("foo")))).toEqual(["ch1", "ch2"]);
    expect(names(s.getOptionalChannels(withHeader("zebra")))).toEqual(["ch2", "ch3"]);
  });

  test("the header defaults to flume.selector.header", () => {
    const s = new MultiplexingChannelSelector(channels, { mapping: { a: ["ch2"] }, default: ["ch1"] });
    expect(s.header).toBe(DEFAULT_MULTIPLEXING_HEADER);
    expect(DEFAULT_MULTIPLEXING_HEADER).toBe("flume.selector.header");
    expect(names(s.getRequiredChannels(withHeader("a", "flume.selector.header")))).toEqual(["ch2"]);
    expect(names(s.getRequiredChannels(withHeader("a", "myheader")))).toEqual(["ch1"]);
  });

  test("a mapping to no channel, or to an unknown channel, is a configuration error naming the key", () => {
    expect(() => make({ mapping: { foo: [] } })).toThrow(ConfigurationError);
    expect(() => make({ mapping: { foo: [] } })).toThrow("selector.mapping.foo");
    expect(() => make({ mapping: { foo: ["ch9"] } })).toThrow("selector.mapping.foo");
    expect(() => make({ mapping: {}, default: ["ch9"] })).toThrow("selector.default");
    expect(() => make({ mapping: {}, optional: { foo: ["ch9"] } })).toThrow("selector.optional.foo");
  });
});

describe("load_balancing selector", () => {
  const channels = () => ["ch1", "ch2", "ch3", "ch4"].map((n) => new MemoryChannel(n));

  test("round_robin (the default) gives each event one channel, in rotation; nothing is optional", () => {
    const s = new LoadBalancingChannelSelector(channels());
    const picked = Array.from({ length: 8 }, () => names(s.getRequiredChannels()));
    expect(picked).toEqual([["ch1"], ["ch2"], ["ch3"], ["ch4"], ["ch1"], ["ch2"], ["ch3"], ["ch4"]]);
    expect(s.getOptionalChannels()).toEqual([]);
    expect(s.fixedRouting()).toBeNull();
  });

  test("random picks one channel per event from the random source", () => {
    const draws = [0.0, 0.99, 0.5, 0.3];
    let i = 0;
    const s = new LoadBalancingChannelSelector(channels(), "random", () => draws[i++ % draws.length]);
    const picked = Array.from({ length: 4 }, () => names(s.getRequiredChannels()));
    expect(picked).toEqual([["ch1"], ["ch4"], ["ch3"], ["ch2"]]);
  });

  test("random with Math.random spreads events over every channel", () => {
    const s = new LoadBalancingChannelSelector(channels(), "random");
    const seen = new Set<string>();
    for (let i = 0; i < 400; i++) for (const c of s.getRequiredChannels()) seen.add(c.name);
    expect([...seen].sort()).toEqual(["ch1", "ch2", "ch3", "ch4"]);
  });

  test("no channels is a configuration error", () => {
    expect(() => new LoadBalancingChannelSelector([])).toThrow(ConfigurationError);
  });
});
