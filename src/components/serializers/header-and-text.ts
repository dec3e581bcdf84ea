import { readHeaders } from "../../core/event.ts";
import { APPEND_NEWLINE_PROPS, lineSerializers } from "./line-serializer.ts";
import type { SerializerFactory } from "./serializer.ts";
import { defineComponent } from "../component.ts";
import { builtIn } from "../registry.ts";

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

export const definition = defineComponent({
  ...builtIn.headerAndTextSerializer,
  doc: "Writes each event's headers as {key=value, ...}, a space, the body and a newline.",
  props: APPEND_NEWLINE_PROPS,
  // `{headers} body`, header order being the event's insertion order (Flume's HeaderAndBodyTextEventSerializer).
  create: (config): SerializerFactory => lineSerializers("header_and_text", config.appendNewline, (event) => encoder.encode(`${javaMapString(readHeaders(event))} `)),
});
