import { defineComponent } from "../component.ts";
import type { Clock } from "../../core/clock.ts";
import type { Event } from "../../core/event.ts";
import { HeaderInterceptor, type Interceptor } from "../../core/interceptor.ts";

/** Puts the time of interception, in epoch milliseconds, into a header (Flume's TimestampInterceptor). */
export class TimestampInterceptor extends HeaderInterceptor {
  constructor(
    header: string,
    preserveExisting: boolean,
    private readonly clock: Clock,
  ) {
    super(header, preserveExisting);
  }

  protected value(): string {
    return String(this.clock.now());
  }

  override interceptAll(events: Event[]): Event[] {
    // One clock read per batch: the events of a batch arrived together.
    const now = String(this.clock.now());
    for (const e of events) if (!(this.preserveExisting && this.header in e.headers)) e.headers[this.header] = now;
    return events;
  }
}

export const definition = defineComponent({
  kind: "interceptor",
  type: "timestamp",
  aliases: ["org.apache.flume.interceptor.TimestampInterceptor$Builder"],
  doc: "Adds the time the event was processed (epoch milliseconds) as a header.",
  props: {
    preserveExisting: { type: "boolean", default: false, doc: "Keep a timestamp header that is already set." },
    headerName: { type: "string", default: "timestamp", doc: "Name of the header to set." },
  },
  create(config, ctx): Interceptor {
    return new TimestampInterceptor(config.headerName, config.preserveExisting, ctx.clock);
  },
});
