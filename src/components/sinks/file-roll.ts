import { mkdir, open } from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";
import path from "node:path";
import type { Clock, TimerHandle } from "../../core/clock.ts";
import { SinkCounter } from "../../core/counters.ts";
import { EventDeliveryException } from "../../core/errors.ts";
import type { Event } from "../../core/event.ts";
import type { Status } from "../../core/sink.ts";
import type { TakeLoop } from "../../pipeline/take-loop.ts";
import { createPart, defineComponent, type ComponentContext } from "../component.ts";
import { builtIn } from "../registry.ts";
import type { Groups, OptionsOf, Props } from "../../config/schema.ts";
import { ChunkOutput } from "../serializers/serializer.ts";
import type { EventSerializer, SerializerFactory } from "../serializers/serializer.ts";
import { BaseSink } from "./base.ts";

/**
 * Names output files as Flume's path managers: DEFAULT is `<prefix><seriesTimestamp>-<n>[.ext]`
 * with one timestamp per sink start; ROLLTIME is `<prefix>yyyyMMddHHmmss-<n>[.ext]` with n
 * restarting each second.
 */
export class PathManager {
  private readonly seriesTimestamp: number;
  private index = 0;
  private current: string | null = null;
  private lastRoll = "";

  constructor(
    readonly directory: string,
    readonly kind: "DEFAULT" | "ROLLTIME",
    readonly prefix: string,
    readonly extension: string,
    private readonly clock: Clock,
  ) {
    this.seriesTimestamp = clock.now();
  }

  nextFile(): string {
    let stamp: string;
    if (this.kind === "ROLLTIME") {
      stamp = rollTimeStamp(new Date(this.clock.now()));
      if (stamp !== this.lastRoll) {
        this.index = 0;
        this.lastRoll = stamp;
      }
    } else {
      stamp = String(this.seriesTimestamp);
    }
    let name = `${this.prefix}${stamp}-${++this.index}`;
    if (this.extension.length > 0) name += `.${this.extension}`;
    this.current = path.join(this.directory, name);
    return this.current;
  }

  getCurrentFile(): string {
    return this.current ?? this.nextFile();
  }

  rotate(): void {
    this.current = null;
  }
}

function rollTimeStamp(d: Date): string {
  const p = (n: number, w = 2) => String(n).padStart(w, "0");
  return `${d.getFullYear()}${p(d.getMonth() + 1)}${p(d.getDate())}${p(d.getHours())}${p(d.getMinutes())}${p(d.getSeconds())}`;
}

const props = {
  "sink.directory": { type: "path", required: true, doc: "Directory where files are written" },
  "sink.rollInterval": { type: "int", default: 30, min: 0, doc: "Seconds between file rolls; 0 writes everything to one file" },
  "sink.batchSize": { type: "int", roles: ["batchSize"], default: 100, min: 1, doc: "Events taken per transaction" },
  "sink.serializer": {
    type: "string",
    default: "TEXT",
    names: { kind: "serializer", settings: "sinkSerializer" },
    doc: "Serializer: TEXT, HEADER_AND_TEXT, AVRO_EVENT, a serializer class name, or the module of a custom one",
  },
  "sink.pathManager": { type: "enum", values: ["DEFAULT", "ROLLTIME"], default: "DEFAULT", doc: "File naming: DEFAULT (<timestamp>-<n>) or ROLLTIME (yyyyMMddHHmmss-<n>)" },
  "sink.pathManager.prefix": { type: "string", default: "", doc: "Prefix of file names" },
  "sink.pathManager.extension": { type: "string", default: "", doc: "Extension of file names (without the dot)" },
} as const satisfies Props;

const groups = { sinkSerializer: { prefix: "sink.serializer.", doc: "The serializer's properties, e.g. sink.serializer.appendNewline" } } as const satisfies Groups;

/** What the schema parses the properties into, with the serializer they name built. */
export type FileRollOptions = OptionsOf<typeof props, typeof groups> & { readonly serializer: SerializerFactory };

/**
 * Flume's file_roll sink (RollingFileSink): writes events to a file in a directory and starts
 * a new file every rollInterval seconds. Each batch is serialized in memory, written to the
 * file with one write and handed to the OS before the take transaction commits, so a
 * committed event is in the file even if the agent dies right after.
 */
export class RollingFileSink extends BaseSink {
  override readonly counter: SinkCounter;
  protected readonly takeLoop: TakeLoop;
  private readonly paths: PathManager;
  private file: FileHandle | null = null;
  private serializer: EventSerializer | null = null;
  private readonly output = new ChunkOutput();
  private shouldRotate = false;
  /** Bytes of whole batches in the current file: a failed batch is cut back to it. */
  private fileBytes = 0;
  /** fileBytes when the batch in progress began. */
  private batchStart = 0;
  private rollTimer: TimerHandle | null = null;

  constructor(
    ctx: ComponentContext,
    readonly options: FileRollOptions,
  ) {
    super(ctx);
    this.counter = new SinkCounter(ctx.name, ctx.clock);
    this.paths = new PathManager(options["sink.directory"], options["sink.pathManager"], options["sink.pathManager.prefix"], options["sink.pathManager.extension"], ctx.clock);
    this.takeLoop = this.newTakeLoop({
      counter: this.counter,
      // Flume's sink counts no batches: BatchEmptyCount and the others stay 0.
      countBatches: false,
      batchSize: options["sink.batchSize"],
      target: () => this.paths.getCurrentFile(),
      deliver: (events) => this.write(events),
      failed: () => this.cutBatch(),
    });
  }

  /** The file currently written, if one is open. */
  get currentFile(): string | null {
    return this.file ? this.paths.getCurrentFile() : null;
  }

  override async start(): Promise<void> {
    this.logger.info(`Starting RollingFileSink ${this.name} in ${this.options["sink.directory"]}`);
    this.counter.start();
    await mkdir(this.options["sink.directory"], { recursive: true });
    if (this.options["sink.rollInterval"] > 0) this.scheduleRoll();
    else this.logger.info(`${this.name}: rollInterval is 0, file rolling will not happen`);
    this.state = "START";
  }

  private scheduleRoll(): void {
    this.rollTimer = this.clock.setTimeout(() => {
      this.shouldRotate = true;
      if (this.state === "START") this.scheduleRoll();
    }, this.options["sink.rollInterval"] * 1000);
  }

  override async stop(): Promise<void> {
    this.state = "STOP";
    if (this.rollTimer) this.clock.clearTimeout(this.rollTimer);
    this.rollTimer = null;
    try {
      await this.closeFile();
    } catch (err) {
      this.logger.error(`${this.name}: unable to close ${this.paths.getCurrentFile()}: ${(err as Error).message}`);
    }
    this.counter.stop();
    this.logger.info(`RollingFile sink ${this.name} stopped. Event metrics: ${JSON.stringify(this.counter.snapshot())}`);
  }

  private async closeFile(): Promise<void> {
    const file = this.file;
    if (!file) return;
    const serializer = this.serializer;
    this.file = null;
    this.serializer = null;
    try {
      if (serializer) {
        serializer.flush();
        serializer.beforeClose();
      }
      await writeAll(file, this.output.take());
      await file.close();
      this.counter.inc("ConnectionClosedCount");
    } catch (err) {
      this.counter.inc("ConnectionFailedCount");
      this.output.clear();
      await file.close().catch(() => {});
      throw err;
    } finally {
      this.paths.rotate();
    }
  }

  private async openFile(): Promise<void> {
    let target = this.paths.getCurrentFile();
    try {
      // The directory may have been removed since start (a cleanup job): make it again.
      await mkdir(this.options["sink.directory"], { recursive: true });
      // Never truncate an existing file: another sink started in the same millisecond, or this
      // one restarted within the same second (ROLLTIME), has the same name. Take the next one.
      let file: FileHandle;
      for (let attempt = 0; ; attempt++) {
        try {
          file = await open(target, "wx");
          break;
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== "EEXIST" || attempt >= 1000) throw err;
          this.paths.rotate();
          target = this.paths.getCurrentFile();
        }
      }
      this.file = file;
      this.fileBytes = 0;
      this.serializer = await this.options.serializer.open(this.output);
      this.serializer.afterCreate();
      // The serializer's header (Avro's) goes to the file at once: an open file reads as complete.
      if (this.output.length > 0) {
        const header = this.output.take();
        await writeAll(file, header);
        this.fileBytes = header.length;
      }
      this.counter.inc("ConnectionCreatedCount");
    } catch (err) {
      this.counter.inc("ConnectionFailedCount");
      await this.file?.close().catch(() => {});
      this.file = null;
      this.serializer = null;
      this.output.clear();
      this.paths.rotate();
      throw new EventDeliveryException(`Failed to open file ${target} while delivering event: ${(err as Error).message}`, { cause: err });
    }
  }

  override async process(): Promise<Status> {
    if (this.shouldRotate) {
      this.shouldRotate = false;
      if (this.file) {
        const closing = this.paths.getCurrentFile();
        try {
          await this.closeFile();
        } catch (err) {
          throw new EventDeliveryException(`Unable to rotate file ${closing} while delivering event: ${(err as Error).message}`, { cause: err });
        }
      }
    }
    // One fstat per batch: a file deleted under us (or its directory removed) would take the
    // batch into nowhere while the channel commits it as delivered.
    if (this.file && (await this.file.stat()).nlink === 0) {
      this.logger.warn(`${this.name}: ${this.paths.getCurrentFile()} was deleted while open; continuing in a new file`);
      await this.abandonFile();
    }
    if (!this.file) await this.openFile();
    this.batchStart = this.fileBytes;
    return super.process();
  }

  /** One batch serialized in memory and written with one write, into the file (the OS) before the commit. */
  private async write(events: readonly Event[]): Promise<void> {
    const serializer = this.serializer as EventSerializer;
    for (let i = 0; i < events.length; i++) serializer.write(events[i]);
    serializer.flush();
    if (this.output.length > 0) {
      const bytes = this.output.take();
      await writeAll(this.file as FileHandle, bytes);
      this.fileBytes += bytes.length;
    }
  }

  /**
   * The batch went back to the channel: cut what reached the file of it (a partial write on a
   * full disk, or a whole batch whose commit failed), or it would be there twice and a torn
   * Avro block would end the file. Then continue in a new file.
   */
  private async cutBatch(): Promise<void> {
    this.output.clear();
    await this.file?.truncate(this.batchStart).catch(() => {});
    await this.abandonFile();
  }

  private async abandonFile(): Promise<void> {
    const file = this.file;
    this.file = null;
    this.serializer = null;
    this.paths.rotate();
    if (file) {
      this.counter.inc("ConnectionClosedCount");
      await file.close().catch(() => {});
    }
  }
}

async function writeAll(file: FileHandle, bytes: Uint8Array): Promise<void> {
  let offset = 0;
  while (offset < bytes.length) {
    const { bytesWritten } = await file.write(bytes, offset, bytes.length - offset);
    offset += bytesWritten;
  }
}

export const definition = defineComponent({
  ...builtIn.fileRollSink,
  doc: "Writes events to files in a local directory, starting a new file every rollInterval seconds.",
  props,
  groups,
  create(config, ctx) {
    return new RollingFileSink(ctx, { ...config, serializer: createPart<SerializerFactory>(ctx, "serializer", "sink.serializer", config["sink.serializer"], config.sinkSerializer) });
  },
});
