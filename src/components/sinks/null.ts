import { EventDeliveryException } from "../../core/errors.ts";
import type { Sink, Status } from "../../core/sink.ts";
import type { ComponentContext, ComponentDefinition } from "../component.ts";
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
    const tx = this.getChannel().getTransaction();
    tx.begin();
    let status: Status = "READY";
    let n = 0;
    try {
      for (; n < this.batchSize; n++) {
        if (tx.take() === null) {
          status = "BACKOFF";
          break;
        }
      }
      await tx.commit();
      this.delivered += n;
      return status;
    } catch (err) {
      await tx.rollback();
      throw new EventDeliveryException(`null sink ${this.name}: failed to take events: ${(err as Error).message}`, { cause: err });
    } finally {
      tx.close();
    }
  }
}

export const definition: ComponentDefinition<NullSink> = {
  schema: {
    kind: "sink",
    type: "null",
    aliases: ["org.apache.flume.sink.NullSink"],
    doc: "Discards every event it takes.",
    props: [{ key: "batchSize", type: "int", default: 100, min: 1, doc: "Events per take transaction" }],
  },
  create(config, ctx) {
    return new NullSink(ctx, config.int("batchSize"));
  },
};
