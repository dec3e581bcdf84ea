import { randomUUID } from "node:crypto";
import { defineComponent } from "../component.ts";
import { builtIn } from "../registry.ts";
import { HeaderInterceptor, type Interceptor } from "../../core/interceptor.ts";
import { preserveExistingProp } from "./preserve-existing.ts";

export const definition = defineComponent({
  ...builtIn.uuidInterceptor,
  doc: "Sets a universally unique identifier header on every event.",
  props: {
    headerName: { type: "string", default: "id", doc: "Name of the header to set." },
    preserveExisting: preserveExistingProp(true),
    prefix: { type: "string", default: "", doc: "Text put before each UUID." },
  },
  create(config): Interceptor {
    return new HeaderInterceptor(config.headerName, config.preserveExisting, () => config.prefix + randomUUID());
  },
});
