import type { Event } from "../../core/event.ts";
import type { ByteOutput, EventSerializer, SerializerFactory } from "./serializer.ts";

export const NEWLINE = new Uint8Array([10]);

/** Flume's appendNewline, which both line serializers (text, header_and_text) read. */
export const APPEND_NEWLINE_PROPS = {
  appendNewline: { type: "boolean", default: true, doc: "Append a newline after each event" },
} as const;

/**
 * Writes each event as a line of text: an optional head made from the event, the body, then a
 * newline unless appendNewline is false. It keeps no state: no file header, nothing to flush,
 * and it can append to an existing file.
 */
export class LineSerializer implements EventSerializer {
  constructor(
    private readonly out: ByteOutput,
    private readonly appendNewline: boolean,
    private readonly head: ((event: Event) => Uint8Array) | null = null,
  ) {}

  afterCreate(): void {}
  afterReopen(): void {}
  beforeClose(): void {}
  flush(): void {}
  supportsReopen(): boolean {
    return true;
  }

  write(event: Event): void {
    if (this.head) this.out.write(this.head(event));
    this.out.write(event.body);
    if (this.appendNewline) this.out.write(NEWLINE);
  }
}

/** The factory of a line serializer (the text and header_and_text serializers). */
export function lineSerializers(type: string, appendNewline: boolean, head: ((event: Event) => Uint8Array) | null = null): SerializerFactory {
  return { type, open: async (out: ByteOutput) => new LineSerializer(out, appendNewline, head) };
}
