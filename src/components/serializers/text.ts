import { lineSerializers } from "./line-serializer.ts";
import type { SerializerFactory } from "./serializer.ts";
import { defineComponent } from "../component.ts";


export const definition = defineComponent({
  kind: "serializer",
  type: "text",
  aliases: ["TEXT", "org.apache.flume.serialization.BodyTextEventSerializer$Builder"],
  doc: "Writes each event's body, followed by a newline.",
  props: {appendNewline: { type: "boolean", default: true, doc: "Append a newline after each event body" }},
  // The body as is (Flume's BodyTextEventSerializer).
  create: (config): SerializerFactory => lineSerializers("text", config.appendNewline),
});
