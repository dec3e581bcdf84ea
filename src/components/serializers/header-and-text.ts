import { readHeaders, type Event } from "../../core/event.ts";
import { LineSerializer, NEWLINE } from "./line-serializer.ts";
import type { ByteOutput, SerializerFactory } from "./serializer.ts";
import { defineComponent } from "../component.ts";

const encoder = new TextEncoder();

/** Headers as Java's Map.toString prints them: `{k1=v1, k2=v2}`. */
export function javaMapString(headers: Record<string, string>): string {
  let s = "{";
  let first = true;
  for (const key in headers) {
    if (!first) s += ", ";
    s += `${key}=${headers[key]}`;
    first = false;
  }
  return `${s}}`;
}

/**
 * `{headers} body`, then a newline unless appendNewline is false (Flume's
 * HeaderAndBodyTextEventSerializer). Header order is the event's insertion order.
 */
export class HeaderAndBodyTextSerializer extends LineSerializer {
  write(event: Event): void {
    this.out.write(encoder.encode(`${javaMapString(readHeaders(event))} `));
    this.out.write(event.body);
    if (this.appendNewline) this.out.write(NEWLINE);
  }
}

export const definition = defineComponent({
  kind: "serializer",
  type: "header_and_text",
  aliases: ["HEADER_AND_TEXT", "org.apache.flume.serialization.HeaderAndBodyTextEventSerializer$Builder"],
  doc: "Writes each event's headers as {key=value, ...}, a space, the body and a newline.",
  props: {appendNewline: { type: "boolean", default: true, doc: "Append a newline after each event" }},
  create(config): SerializerFactory {
    const appendNewline = config.appendNewline;
    return {
      type: "header_and_text",
      open: async (out: ByteOutput) => new HeaderAndBodyTextSerializer(out, appendNewline),
    };
  },
});
