import type { Event } from "../../core/event.ts";
import type { ByteOutput, EventSerializer } from "./serializer.ts";

export const NEWLINE = new Uint8Array([10]);

/**
 * A serializer that writes each event as a line of text and keeps no state: it needs no file
 * header, nothing to flush, and can append to an existing file.
 */
export abstract class LineSerializer implements EventSerializer {
  constructor(
    protected readonly out: ByteOutput,
    protected readonly appendNewline: boolean,
  ) {}

  afterCreate(): void {}
  afterReopen(): void {}
  beforeClose(): void {}
  flush(): void {}
  supportsReopen(): boolean {
    return true;
  }

  abstract write(event: Event): void;
}
