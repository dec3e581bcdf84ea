import { defineComponent } from "../component.ts";
import { builtIn } from "../registry.ts";
import { HeaderInterceptor, type Interceptor } from "../../core/interceptor.ts";
import { preserveExistingProp } from "./preserve-existing.ts";

export const definition = defineComponent({
  ...builtIn.timestampInterceptor,
  doc: "Adds the time the event was processed (epoch milliseconds) as a header.",
  props: {
    preserveExisting: preserveExistingProp(false),
    headerName: { type: "string", default: "timestamp", doc: "Name of the header to set." },
  },
  create(config, ctx): Interceptor {
    return new HeaderInterceptor(config.headerName, config.preserveExisting, () => String(ctx.clock.now()), true);
  },
});
