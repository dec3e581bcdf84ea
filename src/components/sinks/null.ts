import type { TakeLoop } from "../../pipeline/take-loop.ts";
import { defineComponent, type ComponentContext } from "../component.ts";
import { builtIn } from "../registry.ts";
import { BaseSink } from "./base.ts";

/** Flume's null sink: takes events in batches and discards them. Like Flume's, it has no counters. */
export class NullSink extends BaseSink {
  protected readonly takeLoop: TakeLoop;
  private delivered = 0;

  constructor(ctx: ComponentContext, batchSize: number) {
    super(ctx);
    this.takeLoop = this.newTakeLoop({
      batchSize,
      deliver: (events) => {
        this.delivered += events.length;
      },
    });
  }

  /** Events discarded so far. */
  get eventCount(): number {
    return this.delivered;
  }
}

export const definition = defineComponent({
  ...builtIn.nullSink,
  doc: "Discards every event it takes.",
  props: { batchSize: { type: "int", default: 100, min: 1, roles: ["batchSize"], doc: "Events per take transaction" } },
  create(config, ctx) {
    return new NullSink(ctx, config.batchSize);
  },
});
