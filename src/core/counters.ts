import type { Clock } from "./clock.ts";
import { systemClock } from "./clock.ts";

/** Component kinds as they appear in Flume's monitoring keys (`TYPE.name`). */
export type CounterType = "SOURCE" | "CHANNEL" | "SINK" | "CHANNEL_PROCESSOR" | "SINK_PROCESSOR" | "INTERCEPTOR" | "OTHER";

/**
 * A named group of counters, as Flume's MonitoredCounterGroup. Counters are plain numbers on
 * one object so a hot path pays a property increment per batch and nothing else.
 */
export class CounterGroup<K extends string = string> {
  readonly values: Record<K, number>;
  startTime = 0;
  stopTime = 0;

  constructor(
    readonly type: CounterType,
    readonly name: string,
    keys: readonly K[],
    private readonly clock: Clock = systemClock,
  ) {
    this.values = {} as Record<K, number>;
    for (const key of keys) this.values[key] = 0;
  }

  inc(key: K, by = 1): number {
    return (this.values[key] += by);
  }

  get(key: K): number {
    return this.values[key];
  }

  set(key: K, value: number): void {
    this.values[key] = value;
  }

  /** Marks the component started; as Flume, counters reset when it starts again. */
  start(): void {
    for (const key of Object.keys(this.values) as K[]) this.values[key] = 0;
    this.startTime = this.clock.now();
    this.stopTime = 0;
  }

  stop(): void {
    this.stopTime = this.clock.now();
  }

  /** Extra computed attributes (for example ChannelFillPercentage) rendered after the counters. */
  protected extra(): Record<string, string> {
    return {};
  }

  /** The JSON object Flume's HTTP monitoring serves for this group: every value a string. */
  snapshot(): Record<string, string> {
    const out: Record<string, string> = {};
    for (const key of Object.keys(this.values) as K[]) out[key] = String(this.values[key]);
    Object.assign(out, this.extra());
    out.Type = this.type;
    out.StartTime = String(this.startTime);
    out.StopTime = String(this.stopTime);
    return out;
  }
}

/** Formats a number as Java's Double.toString does, which is how Flume prints percentages. */
export function javaDouble(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (!Number.isFinite(value)) return value > 0 ? "Infinity" : "-Infinity";
  if (value === 0) return Object.is(value, -0) ? "-0.0" : "0.0";
  const abs = Math.abs(value);
  if (abs >= 1e-3 && abs < 1e7) {
    const s = String(value);
    return s.includes(".") ? s : `${s}.0`;
  }
  const [mantissa, exponent] = value.toExponential().split("e");
  const m = mantissa.includes(".") ? mantissa : `${mantissa}.0`;
  return `${m}E${Number(exponent)}`;
}

export const CHANNEL_COUNTERS = [
  "ChannelSize",
  "ChannelCapacity",
  "EventPutAttemptCount",
  "EventPutSuccessCount",
  "EventTakeAttemptCount",
  "EventTakeSuccessCount",
] as const;
export type ChannelCounterKey = (typeof CHANNEL_COUNTERS)[number];

export class ChannelCounter<K extends string = ChannelCounterKey> extends CounterGroup<ChannelCounterKey | K> {
  constructor(name: string, extraKeys: readonly K[] = [], clock?: Clock) {
    super("CHANNEL", name, [...CHANNEL_COUNTERS, ...extraKeys], clock);
  }

  fillPercentage(): number {
    const capacity = this.values.ChannelCapacity;
    return capacity === 0 ? 0 : (this.values.ChannelSize * 100) / capacity;
  }

  /** Flume keeps size and capacity across restarts of the counter group. */
  override start(): void {
    const size = this.values.ChannelSize;
    const capacity = this.values.ChannelCapacity;
    super.start();
    this.values.ChannelSize = size;
    this.values.ChannelCapacity = capacity;
  }

  protected override extra(): Record<string, string> {
    return { ChannelFillPercentage: javaDouble(this.fillPercentage()) };
  }
}

export const SOURCE_COUNTERS = [
  "EventReceivedCount",
  "EventAcceptedCount",
  "AppendReceivedCount",
  "AppendAcceptedCount",
  "AppendBatchReceivedCount",
  "AppendBatchAcceptedCount",
  "OpenConnectionCount",
  "EventReadFail",
  "ChannelWriteFail",
  "GenericProcessingFail",
] as const;
export type SourceCounterKey = (typeof SOURCE_COUNTERS)[number];

/** A source's counters: Flume's, plus any the source type adds (extraKeys). */
export class SourceCounter<K extends string = never> extends CounterGroup<SourceCounterKey | K> {
  constructor(name: string, clock?: Clock, extraKeys: readonly K[] = []) {
    super("SOURCE", name, [...SOURCE_COUNTERS, ...extraKeys], clock);
  }
}

export const SINK_COUNTERS = [
  "ConnectionCreatedCount",
  "ConnectionClosedCount",
  "ConnectionFailedCount",
  "BatchEmptyCount",
  "BatchUnderflowCount",
  "BatchCompleteCount",
  "EventDrainAttemptCount",
  "EventDrainSuccessCount",
  "EventWriteFail",
  "ChannelReadFail",
] as const;
export type SinkCounterKey = (typeof SINK_COUNTERS)[number];

export class SinkCounter extends CounterGroup<SinkCounterKey> {
  constructor(name: string, clock?: Clock) {
    super("SINK", name, SINK_COUNTERS, clock);
  }
}
