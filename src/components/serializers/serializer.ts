import type { Event } from "../../core/event.ts";
import type { ComponentDefinition } from "../component.ts";
import { definition as avroEvent } from "./avro-event.ts";
import { definition as headerAndText } from "./header-and-text.ts";
import { definition as text } from "./text.ts";

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

export type SerializerDefinition = ComponentDefinition<SerializerFactory>;

/** The built-in serializers, for sinks that take a `serializer` property. */
export const BUILTIN_SERIALIZERS: readonly SerializerDefinition[] = [text, headerAndText, avroEvent];

/** Finds a serializer by Flume's name (TEXT, HEADER_AND_TEXT, AVRO_EVENT; any case) or class name. */
export function findSerializer(name: string): SerializerDefinition | undefined {
  const key = name.trim().toLowerCase();
  return BUILTIN_SERIALIZERS.find((d) => d.schema.type.toLowerCase() === key || (d.schema.aliases ?? []).some((a) => a.toLowerCase() === key));
}

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
    if (chunks.length === 1) return chunks[0];
    const out = new Uint8Array(size);
    let pos = 0;
    for (const c of chunks) {
      out.set(c, pos);
      pos += c.length;
    }
    return out;
  }

  clear(): void {
    this.chunks = [];
    this.size = 0;
  }
}
