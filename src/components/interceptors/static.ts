import { defineComponent } from "../component.ts";
import type { Event } from "../../core/event.ts";
import { EventInterceptor, type Interceptor } from "../../core/interceptor.ts";

/** Adds one fixed header to every event (Flume's StaticInterceptor). */
export class StaticInterceptor extends EventInterceptor {
  constructor(
    private readonly key: string,
    private readonly value: string,
    private readonly preserveExisting: boolean,
  ) {
    super();
  }

  intercept(event: Event): Event {
    if (this.preserveExisting && this.key in event.headers) return event;
    event.headers[this.key] = this.value;
    return event;
  }
}

export const definition = defineComponent({
  kind: "interceptor",
  type: "static",
  aliases: ["org.apache.flume.interceptor.StaticInterceptor$Builder"],
  doc: "Adds a fixed header with a fixed value to every event.",
  props: {
    preserveExisting: { type: "boolean", default: true, doc: "Keep the header when it is already set." },
    key: { type: "string", default: "key", doc: "Header name." },
    value: { type: "string", default: "value", doc: "Header value." },
  },
  create(config): Interceptor {
    return new StaticInterceptor(config.key, config.value, config.preserveExisting);
  },
});
