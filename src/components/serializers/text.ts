import type { Event } from "../../core/event.ts";
import { LineSerializer, NEWLINE } from "./line-serializer.ts";
import type { ByteOutput, SerializerFactory } from "./serializer.ts";
import { defineComponent } from "../component.ts";


/** The event body as is, then a newline unless appendNewline is false (Flume's BodyTextEventSerializer). */
export class BodyTextSerializer extends LineSerializer {
  write(event: Event): void {
    this.out.write(event.body);
    if (this.appendNewline) this.out.write(NEWLINE);
  }
}

export const definition = defineComponent({
  kind: "serializer",
  type: "text",
  aliases: ["TEXT", "org.apache.flume.serialization.BodyTextEventSerializer$Builder"],
  doc: "Writes each event's body, followed by a newline.",
  props: {appendNewline: { type: "boolean", default: true, doc: "Append a newline after each event body" }},
  create(config): SerializerFactory {
    const appendNewline = config.appendNewline;
    return {
      type: "text",
      open: async (out: ByteOutput) => new BodyTextSerializer(out, appendNewline),
    };
  },
});
