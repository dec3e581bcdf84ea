import type { Event } from "../../core/event.ts";
import type { ComponentDefinition } from "../component.ts";
import { concatBytes } from "../../io/concat-bytes.ts";

/**
 * Where a serializer writes: an in-memory sink the caller drains in one write per batch, so
 * serializing an event never costs a syscall.
 */
export interface ByteOutput {
  write(bytes: Uint8Array): void;
}

/**
 * Turns events into bytes of an output file (Flume's EventSerializer). Calls are synchronous;
 * the owner writes what reached the ByteOutput to the file after flush().
 */
export interface EventSerializer {
  /** Called once on a new, empty file (writes a file header, e.g. Avro's). */
  afterCreate(): void;
  /** Called when appending to an existing file; only if supportsReopen(). */
  afterReopen(): void;
  write(event: Event): void;
  /** Completes everything written so far (e.g. closes an Avro block). */
  flush(): void;
  beforeClose(): void;
  supportsReopen(): boolean;
}

/** A configured serializer type; open() may load libraries (avsc) on first use. */
export interface SerializerFactory {
  readonly type: string;
  open(out: ByteOutput): Promise<EventSerializer>;
}

/**
 * A serializer type: a component of kind "serializer", in the registry like every other (the
 * built-in TEXT, HEADER_AND_TEXT, AVRO_EVENT, and custom modules); a sink names it with a
 * property whose schema says `names: { kind: "serializer" }` and finds it with ctx.lookup.
 */
export type SerializerDefinition = ComponentDefinition<SerializerFactory>;

/** Appends to an array of chunks; take() hands them out as one buffer. */
export class ChunkOutput implements ByteOutput {
  private chunks: Uint8Array[] = [];
  private size = 0;

  write(bytes: Uint8Array): void {
    this.chunks.push(bytes);
    this.size += bytes.length;
  }

  get length(): number {
    return this.size;
  }

  /** Everything written since the last take, as one buffer (no copy for a single chunk). */
  take(): Uint8Array {
    const chunks = this.chunks;
    this.chunks = [];
    const size = this.size;
    this.size = 0;
    return concatBytes(chunks, size);
  }

  clear(): void {
    this.chunks = [];
    this.size = 0;
  }
}
