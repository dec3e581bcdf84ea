import { randomBytes } from "node:crypto";
import { deflateRawSync } from "node:zlib";
import type { Logger } from "../../core/logger.ts";
import { readHeaders, type Event } from "../../core/event.ts";
import type { ByteOutput, EventSerializer, SerializerFactory } from "./serializer.ts";
import { defineComponent } from "../component.ts";
import { builtIn } from "../registry.ts";

/** Flume's event schema (FlumeEventAvroEventSerializer), written into every file's header. */
export const FLUME_EVENT_SCHEMA = {
  type: "record",
  name: "Event",
  fields: [
    { name: "headers", type: { type: "map", values: "string" } },
    { name: "body", type: "bytes" },
  ],
} as const;

const MAGIC = new Uint8Array([0x4f, 0x62, 0x6a, 0x01]); // "Obj" 1

/** The subset of avsc's Type we use. */
interface AvroType {
  encode(value: unknown, buf: Buffer, pos?: number): number;
  toBuffer(value: unknown): Buffer;
}

/** Appends Avro's zig-zag varint encoding of a long. */
function writeLong(n: number, out: number[]): void {
  // Zig-zag with arithmetic, not bit ops, so values past 2^31 stay exact.
  let z = n >= 0 ? n * 2 : -n * 2 - 1;
  while (z >= 0x80) {
    out.push((z % 0x80) | 0x80);
    z = Math.floor(z / 0x80);
  }
  out.push(z);
}

export type AvroCodec = "null" | "deflate";

/**
 * Avro object container files of Flume events: header (magic, schema, codec, sync marker),
 * then blocks of records, each closed by the sync marker. A block ends when it reaches
 * syncIntervalBytes and at every flush(), so what a sink flushed is a readable file.
 */
export class AvroEventSerializer implements EventSerializer {
  private readonly sync = randomBytes(16);
  private block: Buffer = Buffer.allocUnsafe(64 * 1024);
  private blockLength = 0;
  private blockCount = 0;

  constructor(
    private readonly out: ByteOutput,
    private readonly type: AvroType,
    private readonly metaType: AvroType,
    private readonly syncIntervalBytes: number,
    private readonly codec: AvroCodec,
  ) {}

  afterCreate(): void {
    const meta = {
      "avro.schema": Buffer.from(JSON.stringify(FLUME_EVENT_SCHEMA)),
      "avro.codec": Buffer.from(this.codec),
    };
    this.out.write(MAGIC);
    this.out.write(this.metaType.toBuffer(meta));
    this.out.write(this.sync);
  }

  afterReopen(): void {
    throw new Error("Avro container files cannot be appended to after a reopen");
  }

  supportsReopen(): boolean {
    return false;
  }

  write(event: Event): void {
    const body = event.body;
    const record = { headers: readHeaders(event), body: Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength) };
    let end = this.type.encode(record, this.block, this.blockLength);
    while (end < 0) {
      // encode() returns minus the missing byte count when the buffer is too small.
      const bigger = Buffer.allocUnsafe(Math.max(this.block.length * 2, this.blockLength - end));
      this.block.copy(bigger, 0, 0, this.blockLength);
      this.block = bigger;
      end = this.type.encode(record, this.block, this.blockLength);
    }
    this.blockLength = end;
    this.blockCount++;
    if (this.blockLength >= this.syncIntervalBytes) this.writeBlock();
  }

  flush(): void {
    if (this.blockCount > 0) this.writeBlock();
  }

  beforeClose(): void {}

  private writeBlock(): void {
    const raw = this.block.subarray(0, this.blockLength);
    const data = this.codec === "deflate" ? deflateRawSync(raw) : Buffer.from(raw);
    const head: number[] = [];
    writeLong(this.blockCount, head);
    writeLong(data.length, head);
    this.out.write(Uint8Array.from(head));
    this.out.write(data);
    this.out.write(this.sync);
    this.blockLength = 0;
    this.blockCount = 0;
  }
}

let avscTypes: Promise<{ event: AvroType; meta: AvroType }> | null = null;

/** Loads avsc on first use: `flume validate` and `--help` never pay for it. */
function loadTypes(): Promise<{ event: AvroType; meta: AvroType }> {
  avscTypes ??= import("avsc").then((avro) => ({
    event: avro.Type.forSchema(FLUME_EVENT_SCHEMA as unknown as Parameters<typeof avro.Type.forSchema>[0]) as unknown as AvroType,
    meta: avro.Type.forSchema({ type: "map", values: "bytes" }) as unknown as AvroType,
  }));
  return avscTypes;
}

export function resolveCodec(name: string, logger?: Logger): AvroCodec {
  const lower = name.trim().toLowerCase();
  if (lower === "null" || lower === "deflate") return lower;
  logger?.warn(`Unable to instantiate avro codec with name (${name}). Compression disabled.`);
  return "null";
}

export const definition = defineComponent({
  ...builtIn.avroEventSerializer,
  doc: "Writes Avro object container files of Flume events (record Event: headers map<string>, body bytes).",
  props: {
    syncIntervalBytes: { type: "int", default: 2048000, min: 1, doc: "Approximate block size in bytes before a sync marker is written" },
    compressionCodec: {
      type: "string",
      default: "null",
      doc: "Block compression: null or deflate (other Avro codecs fall back to null with a warning)",
    },
  },
  create(config, ctx): SerializerFactory {
    const syncIntervalBytes = config.syncIntervalBytes;
    const codec = resolveCodec(config.compressionCodec, ctx.logger);
    return {
      type: "avro_event",
      async open(out: ByteOutput) {
        const types = await loadTypes();
        return new AvroEventSerializer(out, types.event, types.meta, syncIntervalBytes, codec);
      },
    };
  },
});
