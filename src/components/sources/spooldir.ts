import { rm, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { ConfigurationError } from "../../core/errors.ts";
import type { Event } from "../../core/event.ts";
import type { EventDrivenSource } from "../../core/source.ts";
import { createPart, defineComponent, type ComponentContext } from "../component.ts";
import { builtIn } from "../registry.ts";
import { compileJavaFullMatch } from "../../java/regex.ts";
import { BaseSource } from "./base.ts";
import type { Cut, DecodeErrorPolicy, DeserializerFactory } from "./spooldir/deserializers.ts";
import { isSupportedInputCharset } from "./spooldir/deserializers.ts";
import { Completion } from "./spooldir/completion.ts";
import { type Candidate, FilePicker } from "./spooldir/picker.ts";
import { type Current, type SpoolDirOptions, SpoolScope } from "./spooldir/scope.ts";
import type { SpoolPosition } from "./spooldir/tracker.ts";
import { Tracker, parsePosition } from "./spooldir/tracker.ts";
import { LockHeldError, OwnerLock, directoryLockFile } from "../../io/owner-lock.ts";
import { Sleeper } from "../../core/sleeper.ts";

export type { SpoolDirOptions } from "./spooldir/scope.ts";

/** The tracker directory a configuration names: inside the spool unless absolute. */
function trackerDirOf(spoolDir: string, trackerDir: string, ctx: Pick<ComponentContext, "storagePath">): string {
  return path.resolve(path.isAbsolute(trackerDir) ? ctx.storagePath(trackerDir) : path.join(spoolDir, trackerDir));
}

/**
 * Flume's spooling directory source: reads each file dropped into a directory, then renames it
 * with fileSuffix (or records it in the tracker directory, or deletes it). A file is marked
 * done only after all its events are committed. The committed position is kept in a meta file
 * (and stored with the events in a durable channel), so a restart resumes where the last
 * committed batch ended. A file that changed after pickup, a reused name or undecodable input
 * gets an error naming the file and is set aside (a FAILED marker in the tracker directory);
 * the source keeps serving the other files.
 *
 * This file holds the schema, the lifecycle and the read loop; which file is read next is
 * spooldir/picker.ts, what becomes of a file read (or set aside) spooldir/completion.ts.
 */
export class SpoolDirectorySource extends BaseSource implements EventDrivenSource {
  readonly kind = "event-driven";
  private readonly scope: SpoolScope;
  private readonly tracker: Tracker;
  private readonly picker: FilePicker;
  private readonly completion: Completion;
  private loop: Promise<void> | null = null;
  private readonly sleeper: Sleeper;
  /** Position handed over by a durable channel at start, preferred over the meta file. */
  private channelPosition: SpoolPosition | null = null;
  private lock: OwnerLock | null = null;

  constructor(
    ctx: ComponentContext,
    readonly options: SpoolDirOptions,
  ) {
    super(ctx, { maxBackoff: options.maxBackoff });
    this.sleeper = new Sleeper(ctx.clock);
    this.tracker = new Tracker(path.resolve(options.spoolDir), trackerDirOf(options.spoolDir, options.trackerDir, ctx));
    this.scope = new SpoolScope(this.name, options, this.tracker, this.clock, this.logger, this.counter, () => this.getChannelProcessor());
    this.completion = new Completion(this.scope);
    this.picker = new FilePicker(this.scope, this.completion, this.sleeper, ctx.random, () => this.candidates());
  }

  async start(): Promise<void> {
    this.logger.info(`SpoolDirectorySource source starting with directory: ${this.options.spoolDir}`);
    const dir = this.options.spoolDir;
    let s;
    try {
      s = await stat(dir);
    } catch {
      throw new ConfigurationError("spoolDir", `Directory does not exist: ${path.resolve(dir)}`, this.name);
    }
    if (!s.isDirectory()) throw new ConfigurationError("spoolDir", `Path is not a directory: ${path.resolve(dir)}`, this.name);
    if (this.options.trackingPolicy === "rename") await this.canary();
    await this.tracker.init();
    try {
      this.lock = OwnerLock.acquire(directoryLockFile(this.tracker.dir), `tracker directory ${this.tracker.dir} of spooldir source ${this.name}`, `flume-ts spooldir source ${this.name}`);
    } catch (err) {
      if (err instanceof LockHeldError) throw new ConfigurationError("trackerDir", err.message, this.name);
      throw err;
    }
    if (this.lock.tookOverFrom) this.logger.warn(`${this.name}: took over ${this.lock.file} from process ${this.lock.tookOverFrom.pid}, which is no longer running`);
    this.channelPosition = this.durablePosition();
    this.scope.durable = this.getChannelProcessor()
      .getChannels()
      .some((c) => c.durable === true);
    this.beginStart();
    this.scope.running = true;
    this.state = "START";
    this.picker.watch(dir);
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.scope.running = false;
    this.sleeper.wake();
    this.emitter.stop();
    await this.loop;
    this.loop = null;
    this.picker.close();
    const current = this.scope.current;
    if (current) {
      await current.handle.close().catch(() => {});
      this.scope.current = null;
    }
    this.lock?.release();
    this.lock = null;
    this.counter.stop();
    this.state = "STOP";
    this.logger.info(`SpoolDir source ${this.name} stopped. Metrics: ${JSON.stringify(this.counter.snapshot())}`);
  }

  /** Checks that files in the spool directory can be created and removed (they get renamed). */
  private async canary(): Promise<void> {
    const p = path.join(this.options.spoolDir, `.flume-spooldir-perm-check-${process.pid}-${Math.random().toString(36).slice(2)}.canary`);
    try {
      await writeFile(p, "testing flume file permissions\n");
      await rm(p);
    } catch (err) {
      throw new ConfigurationError("spoolDir", `Unable to read and modify files in the spooling directory: ${this.options.spoolDir}: ${(err as Error).message}`, this.name);
    }
  }

  private durablePosition(): SpoolPosition | null {
    for (const channel of this.getChannelProcessor().getChannels()) {
      if (!channel.durable || !channel.sourcePosition) continue;
      const value = channel.sourcePosition(this.name);
      if (value === undefined) continue;
      const p = parsePosition(value);
      if (p) return p;
    }
    return null;
  }

  /** One listing of the spool (a walk, a stat and marker check per file): what a backlog must not repeat per file. */
  private candidates(): Promise<Candidate[]> {
    return this.picker.candidates();
  }

  private async run(): Promise<void> {
    await Promise.resolve();
    while (this.scope.running) {
      try {
        this.picker.wakePending = false;
        const worked = await this.step();
        // An event that came while we looked may be about a file the look missed.
        if (!worked && this.scope.running && !this.picker.wakePending) await this.sleeper.sleep(this.options.pollDelay);
      } catch (err) {
        this.emitter.failed(err, "unexpected error in the spooling directory source (will retry)");
        if (this.scope.running) await this.sleeper.sleep(this.options.pollDelay);
      }
    }
  }

  /** Reads and commits one batch (opening the next file if needed); false when idle. */
  private async step(): Promise<boolean> {
    if (!this.scope.current) {
      const handedOver = this.channelPosition;
      this.channelPosition = null;
      this.scope.current = await this.picker.next(handedOver);
      if (!this.scope.current) return false;
    }
    const cur = this.scope.current;
    let cut: Cut;
    try {
      cut = await cur.deserializer.read(this.options.batchSize);
    } catch (err) {
      this.counter.inc("EventReadFail");
      await this.completion.setAside(cur, `read error at byte ${cur.pos}: ${(err as Error).message}`);
      return true;
    }
    if (cut.events.length === 0 && cur.firstRead && cut.atEnd && cur.size === 0) {
      cut.events.push({ headers: {}, body: new Uint8Array(0) });
    }
    cur.firstRead = false;
    if (cut.events.length > 0) {
      this.annotate(cur, cut.events);
      const committed = await this.commit(cur, cut);
      if (!committed) return true; // stopped while retrying: nothing more to do
    }
    if (cut.error) {
      this.counter.inc("EventReadFail");
      await this.completion.setAside(cur, `undecodable input at byte ${cut.error.offset}: ${cut.error.message} (inputCharset ${this.options.inputCharset}, decodeErrorPolicy ${this.options.decodeErrorPolicy})`);
      return true;
    }
    if (cut.atEnd) await this.completion.complete(cur);
    return true;
  }

  private annotate(cur: Current, events: Event[]): void {
    const o = this.options;
    if (!o.fileHeader && !o.basenameHeader) return;
    const abs = path.resolve(cur.path);
    const base = path.basename(cur.path);
    for (const e of events) {
      if (o.fileHeader) e.headers[o.fileHeaderKey] = abs;
      if (o.basenameHeader) e.headers[o.basenameHeaderKey] = base;
    }
  }

  /** Commits a batch (retried until it commits); false when the source stopped first. */
  private async commit(cur: Current, cut: Cut): Promise<boolean> {
    const position: SpoolPosition = { file: path.resolve(cur.path), ino: cur.ino, size: cur.size, mtimeMs: cur.mtimeMs, pos: cut.endPos };
    const stored = this.scope.durable ? { source: this.name, value: JSON.stringify(position) } : undefined;
    if (!(await this.emitter.deliver(cut.events, { position: stored }))) return false;
    cur.pos = cut.endPos;
    await this.tracker.writePosition(position);
    return true;
  }
}

export const definition = defineComponent({
  ...builtIn.spooldirSource,
  doc: "Reads files dropped into a directory, then renames (or deletes) each once all its events are committed.",
  props: {
    spoolDir: { type: "path", required: true, doc: "Directory to read files from" },
    fileSuffix: { type: "string", default: ".COMPLETED", doc: "Suffix appended to completely read files" },
    deletePolicy: { type: "enum", values: ["never", "immediate"], default: "never", doc: "When to delete completed files: never or immediate" },
    trackingPolicy: { type: "enum", values: ["rename", "tracker_dir"], default: "rename", doc: "rename completed files, or record them in trackerDir (tracker_dir)" },
    trackerDir: { type: "path", default: ".flumespool", doc: "Directory for metadata (relative paths are inside spoolDir)" },
    consumeOrder: { type: "enum", values: ["oldest", "youngest", "random"], default: "oldest", doc: "Order in which files are read, by modification time" },
    pollDelay: { type: "int", default: 500, min: 1, doc: "Milliseconds between polls for new files" },
    batchSize: { type: "int", roles: ["batchSize"], default: 100, min: 1, doc: "Events per channel transaction" },
    maxBackoff: { type: "int", default: 4000, min: 1, doc: "Longest wait (ms) between retries when the channel is full (the first is 100 ms, doubling)" },
    includePattern: { type: "string", default: "^.*$", doc: "Regex of file names to read" },
    ignorePattern: { type: "string", default: "^$", doc: "Regex of file names to skip" },
    recursiveDirectorySearch: { type: "boolean", default: false, doc: "Also read files in subdirectories" },
    deserializer: {
      type: "string",
      default: "LINE",
      names: { kind: "deserializer", settings: "deserializerSettings" },
      doc: "LINE (one event per line), BLOB (one event per file), a deserializer class name, or the module of a custom one",
    },
    bufferMaxLineLength: { type: "int", min: 1, doc: "The old name of deserializer.maxLineLength (LINE), used when that is not set" },
    inputCharset: { type: "string", default: "UTF-8", doc: "Charset of the files (UTF-8, US-ASCII, ISO-8859-x, windows-125x)" },
    decodeErrorPolicy: { type: "enum", values: ["FAIL", "REPLACE", "IGNORE"], default: "FAIL", doc: "On undecodable input: FAIL (set the file aside), REPLACE (U+FFFD) or IGNORE" },
    fileHeader: { type: "boolean", default: false, doc: "Add the file's absolute path as a header" },
    fileHeaderKey: { type: "string", default: "file", doc: "Header name for fileHeader" },
    basenameHeader: { type: "boolean", default: false, doc: "Add the file's name as a header" },
    basenameHeaderKey: { type: "string", default: "basename", doc: "Header name for basenameHeader" },
  },
  groups: { deserializerSettings: { prefix: "deserializer.", doc: "The deserializer's properties, e.g. deserializer.maxLineLength (LINE), deserializer.maxBlobLength (BLOB)" } },
  claims(config, ctx) {
    const dir = trackerDirOf(config.spoolDir, config.trackerDir, ctx);
    return [{ file: directoryLockFile(dir), what: `tracker directory ${dir}` }];
  },
  create(config, ctx) {
    for (const e of validate(config)) throw new ConfigurationError(e.key, e.message, ctx.name);
    return new SpoolDirectorySource(ctx, {
      spoolDir: config.spoolDir,
      fileSuffix: config.fileSuffix,
      deletePolicy: config.deletePolicy as "never" | "immediate",
      trackingPolicy: config.trackingPolicy as "rename" | "tracker_dir",
      trackerDir: config.trackerDir,
      consumeOrder: config.consumeOrder as "oldest" | "youngest" | "random",
      pollDelay: config.pollDelay,
      batchSize: config.batchSize,
      maxBackoff: config.maxBackoff,
      includePattern: config.includePattern,
      ignorePattern: config.ignorePattern,
      recursiveDirectorySearch: config.recursiveDirectorySearch,
      deserializer: createPart<DeserializerFactory>(ctx, "deserializer", "deserializer", config.deserializer, config.deserializerSettings, legacyLineLength(config)),
      inputCharset: config.inputCharset,
      decodeErrorPolicy: config.decodeErrorPolicy as DecodeErrorPolicy,
      fileHeader: config.fileHeader,
      fileHeaderKey: config.fileHeaderKey,
      basenameHeader: config.basenameHeader,
      basenameHeaderKey: config.basenameHeaderKey,
    });
  },
  validate,
});

/** The deserializer's settings: those under `deserializer.`, and the old bufferMaxLineLength for LINE's maxLineLength. */
/** bufferMaxLineLength, the old name of deserializer.maxLineLength, when that is not set. */
function legacyLineLength(config: { bufferMaxLineLength: number | undefined; deserializerSettings: Readonly<Record<string, string>> }): { maxLineLength?: number } {
  const old = config.bufferMaxLineLength;
  return old === undefined || "maxLineLength" in config.deserializerSettings ? {} : { maxLineLength: old };
}

function validate(config: { fileSuffix: string; inputCharset: string; includePattern: string; ignorePattern: string }): { key: string; message: string }[] {
  const errors: { key: string; message: string }[] = [];
  if (config.fileSuffix === "") {
    errors.push({ key: "fileSuffix", message: "must not be empty: files ending in it count as completed, and every name ends in the empty string" });
  }
  if (!isSupportedInputCharset(config.inputCharset)) {
    errors.push({ key: "inputCharset", message: `unsupported charset "${config.inputCharset}": lines are cut at byte 0x0A, so it must be UTF-8, US-ASCII, ISO-8859-x or windows-125x` });
  }
  for (const key of ["includePattern", "ignorePattern"] as const) {
    try {
      compileJavaFullMatch(config[key], key);
    } catch (err) {
      errors.push({ key, message: (err as Error).message });
    }
  }
  return errors;
}
