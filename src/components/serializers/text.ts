import { APPEND_NEWLINE_PROPS, lineSerializers } from "./line-serializer.ts";
import type { SerializerFactory } from "./serializer.ts";
import { defineComponent } from "../component.ts";
import { builtIn } from "../registry.ts";


export const definition = defineComponent({
  ...builtIn.textSerializer,
  doc: "Writes each event's body, followed by a newline.",
  props: APPEND_NEWLINE_PROPS,
  // The body as is (Flume's BodyTextEventSerializer).
  create: (config): SerializerFactory => lineSerializers("text", config.appendNewline),
});
