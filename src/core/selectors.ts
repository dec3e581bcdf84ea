import type { Channel } from "./channel.ts";
import { ConfigurationError } from "./errors.ts";
import type { Event } from "./event.ts";

const NONE: readonly Channel[] = Object.freeze([]);

/**
 * Chooses, per event, the channels that must take it (a failure fails the batch) and those
 * that may (failures are logged and ignored), as Flume's ChannelSelector.
 */
export interface ChannelSelector {
  readonly type: string;
  getAllChannels(): readonly Channel[];
  getRequiredChannels(event: Event): readonly Channel[];
  getOptionalChannels(event: Event): readonly Channel[];
  /**
   * When routing does not depend on the event, the fixed routing; lets the ChannelProcessor
   * hand a whole batch to each channel without looking at events one by one.
   */
  fixedRouting(): { required: readonly Channel[]; optional: readonly Channel[] } | null;
}

function byName(channels: readonly Channel[], names: readonly string[], key: string): Channel[] {
  return names.map((n) => {
    const c = channels.find((ch) => ch.name === n);
    if (!c) throw new ConfigurationError(key, `channel "${n}" is not one of this source's channels (${channels.map((ch) => ch.name).join(", ")})`);
    return c;
  });
}

/** Every event to every channel; channels named in `optional` are optional. */
export class ReplicatingChannelSelector implements ChannelSelector {
  readonly type = "replicating";
  private readonly required: Channel[];
  private readonly optional: Channel[];

  constructor(
    private readonly channels: readonly Channel[],
    optionalNames: readonly string[] = [],
  ) {
    // A channel named twice is optional once; otherwise every batch would be written to it twice.
    this.optional = [...new Set(byName(channels, optionalNames, "selector.optional"))];
    this.required = channels.filter((c) => !this.optional.includes(c));
  }

  getAllChannels(): readonly Channel[] {
    return this.channels;
  }
  getRequiredChannels(): readonly Channel[] {
    return this.required;
  }
  getOptionalChannels(): readonly Channel[] {
    return this.optional;
  }
  fixedRouting() {
    return { required: this.required, optional: this.optional };
  }
}

export interface MultiplexingOptions {
  /** Header to route on; Flume's default is "flume.selector.header". */
  header?: string;
  /** header value -> required channel names */
  mapping: Record<string, readonly string[]>;
  /** header value -> optional channel names */
  optional?: Record<string, readonly string[]>;
  /** channels for events whose header is missing or unmapped */
  default?: readonly string[];
}

export const DEFAULT_MULTIPLEXING_HEADER = "flume.selector.header";

/** Routes on a header value: mapping.<value> required, optional.<value> optional, else default. */
export class MultiplexingChannelSelector implements ChannelSelector {
  readonly type = "multiplexing";
  readonly header: string;
  private readonly mapping = new Map<string, Channel[]>();
  private readonly optional = new Map<string, Channel[]>();
  private readonly defaults: Channel[];

  constructor(
    private readonly channels: readonly Channel[],
    options: MultiplexingOptions,
  ) {
    this.header = options.header ?? DEFAULT_MULTIPLEXING_HEADER;
    for (const [value, names] of Object.entries(options.mapping)) {
      const list = byName(channels, names, `selector.mapping.${value}`);
      if (list.length === 0) throw new ConfigurationError(`selector.mapping.${value}`, "maps to no channel");
      this.mapping.set(value, list);
    }
    this.defaults = byName(channels, options.default ?? [], "selector.default");
    for (const [value, names] of Object.entries(options.optional ?? {})) {
      // A channel already required for this value is not also optional (as Flume).
      const required = this.mapping.get(value) ?? this.defaults;
      this.optional.set(
        value,
        byName(channels, names, `selector.optional.${value}`).filter((c) => !required.includes(c)),
      );
    }
  }

  getAllChannels(): readonly Channel[] {
    return this.channels;
  }

  getRequiredChannels(event: Event): readonly Channel[] {
    const value = event.headers[this.header];
    if (value === undefined || value.trim() === "") return this.defaults;
    return this.mapping.get(value) ?? this.defaults;
  }

  getOptionalChannels(event: Event): readonly Channel[] {
    const value = event.headers[this.header];
    return (value !== undefined && this.optional.get(value)) || NONE;
  }

  fixedRouting() {
    return null;
  }
}

export type LoadBalancingPolicy = "round_robin" | "random";

/** Sends each event to one channel, in rotation or at random (Flume 1.10's load_balancing selector). */
export class LoadBalancingChannelSelector implements ChannelSelector {
  readonly type = "load_balancing";
  private next = 0;
  private readonly single: Channel[][];

  constructor(
    private readonly channels: readonly Channel[],
    private readonly policy: LoadBalancingPolicy = "round_robin",
    private readonly random: () => number = Math.random,
  ) {
    if (channels.length === 0) throw new ConfigurationError("channels", "the load_balancing selector needs at least one channel");
    this.single = channels.map((c) => [c]);
  }

  getAllChannels(): readonly Channel[] {
    return this.channels;
  }

  getRequiredChannels(): readonly Channel[] {
    if (this.policy === "random") return this.single[Math.floor(this.random() * this.single.length)];
    const pick = this.single[this.next];
    this.next = (this.next + 1) % this.single.length;
    return pick;
  }

  getOptionalChannels(): readonly Channel[] {
    return NONE;
  }

  fixedRouting() {
    return null;
  }
}
