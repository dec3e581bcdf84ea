import { defineComponent } from "../component.ts";
import { HeaderInterceptor, type Interceptor } from "../../core/interceptor.ts";

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
    return new HeaderInterceptor(config.key, config.preserveExisting, () => config.value);
  },
});
