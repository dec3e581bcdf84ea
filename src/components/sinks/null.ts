import type { Sink, Status } from "../../core/sink.ts";
import { defineComponent, type ComponentContext } from "../component.ts";
import { BaseSink } from "./base.ts";

/** Flume's null sink: takes events in batches and discards them. Like Flume's, it has no counters. */
export class NullSink extends BaseSink implements Sink {
  private delivered = 0;

  constructor(
    ctx: ComponentContext,
    private readonly batchSize: number,
  ) {
    super(ctx);
  }

  /** Events discarded so far. */
  get eventCount(): number {
    return this.delivered;
  }

  start(): void {
    this.state = "START";
  }

  stop(): void {
    this.state = "STOP";
  }

  async process(): Promise<Status> {
    const { status, count } = await this.takeBatch(this.batchSize, () => {});
    this.delivered += count;
    return status;
  }
}

export const definition = defineComponent({
  kind: "sink",
  type: "null",
  aliases: ["org.apache.flume.sink.NullSink"],
  doc: "Discards every event it takes.",
  props: { batchSize: { type: "int", default: 100, min: 1, roles: ["batchSize"], doc: "Events per take transaction" } },
  create(config, ctx) {
    return new NullSink(ctx, config.batchSize);
  },
});
