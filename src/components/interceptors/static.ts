import { defineComponent } from "../component.ts";
import { builtIn } from "../registry.ts";
import { HeaderInterceptor, type Interceptor } from "../../core/interceptor.ts";
import { preserveExistingProp } from "./preserve-existing.ts";

export const definition = defineComponent({
  ...builtIn.staticInterceptor,
  doc: "Adds a fixed header with a fixed value to every event.",
  props: {
    preserveExisting: preserveExistingProp(true),
    key: { type: "string", default: "key", doc: "Header name." },
    value: { type: "string", default: "value", doc: "Header value." },
  },
  create(config): Interceptor {
    return new HeaderInterceptor(config.key, config.preserveExisting, () => config.value);
  },
});
