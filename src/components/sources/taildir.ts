import { mkdirSync } from "node:fs";
import { stat } from "node:fs/promises";
import { homedir } from "node:os";
import path from "node:path";
import type { TimerHandle } from "../../core/clock.ts";
import { ConfigurationError } from "../../core/errors.ts";
import type { Status } from "../../core/sink.ts";
import type { PollableSource } from "../../core/source.ts";
import { LockFileError, LockHeldError, OwnerLock } from "../../io/owner-lock.ts";
import { ioReason, unwritableDirectory } from "../../io/writable-dir.ts";
import { defineComponent, type ComponentContext } from "../component.ts";
import { builtIn } from "../registry.ts";
import type { SourceCounter } from "../../core/counters.ts";
import { BaseSource } from "./base.ts";
import { Discovery } from "./taildir/discovery.ts";
import { FileGroupMatcher } from "./taildir/matcher.ts";
import { POSITION_RESET_COUNTER, type TaildirOptions, positionLockFile } from "./taildir/options.ts";
import type { PositionEntry } from "./taildir/position-file.ts";
import { PositionKeeper } from "./taildir/positions.ts";
import { TailReader } from "./taildir/reader.ts";
import { Rotation } from "./taildir/rotation.ts";
import { TaildirScope } from "./taildir/scope.ts";
import { FileEvents } from "./taildir/watching.ts";

export { BYTE_OFFSET_HEADER_KEY, POSITION_RESET_COUNTER, type TaildirOptions, positionLockFile } from "./taildir/options.ts";

/**
 * Position files in use in this process -> the source using it. Two sources on one file
 * (both left at the default path, say) would overwrite each other's positions.
 */
const positionFileOwners = new Map<string, string>();

/**
 * Flume's TAILDIR source: tails every file matching the groups' patterns, identifies files by
 * inode, and keeps positions in Flume's JSON position file. Unlike Flume, a position moves only
 * after the batch is committed, and what a restart needs (positions and fingerprints of every
 * tracked file, see taildir/state.ts) is stored with the commit by a durable channel, or
 * appended to the state file right after it otherwise. A file rotated away by rename is
 * drained to its end (found again by inode after a restart), and a copy made by copytruncate
 * is recognised and continued where the original was, so rotation neither loses nor repeats
 * lines. File-system events wake the source; polling with Flume's backoff stays the fallback.
 *
 * This file holds the schema and the lifecycle; the parts live in taildir/: discovery (finding
 * and placing files), watching (file-system events), positions (the position journal),
 * rotation (copies and truncations) and reader (the read loop).
 */
export class TaildirSource extends BaseSource implements PollableSource {
  readonly kind = "pollable";
  readonly backoffSleepIncrement: number;
  readonly maxBackoffSleep: number;
  private readonly scope: TaildirScope;
  private readonly positionKeeper: PositionKeeper;
  private readonly events: FileEvents;
  private readonly discovery: Discovery;
  private readonly reader: TailReader;
  private lock: OwnerLock | null = null;
  private posTimer: TimerHandle | null = null;
  declare readonly counter: SourceCounter<typeof POSITION_RESET_COUNTER>;

  constructor(
    ctx: ComponentContext,
    readonly options: TaildirOptions,
  ) {
    super(ctx, {}, [POSITION_RESET_COUNTER]);
    this.backoffSleepIncrement = options.backoffSleepIncrement;
    this.maxBackoffSleep = options.maxBackoffSleep;
    const matchers = Object.entries(options.filegroups).map(([g, p]) => new FileGroupMatcher(g, p, options.cachePatternMatching));
    this.scope = new TaildirScope(this.name, options, matchers, this.clock, this.logger, this.counter);
    this.positionKeeper = new PositionKeeper(this.scope);
    this.events = new FileEvents(this.scope);
    const rotation = new Rotation(this.scope, this.positionKeeper);
    this.discovery = new Discovery(this.scope, this.positionKeeper, rotation, this.events);
    this.reader = new TailReader(this.scope, this.positionKeeper, this.discovery, this.events, this.emitter);
  }

  /** Committed positions of the tracked files (what the position file holds). */
  positions(): PositionEntry[] {
    return this.scope.positions();
  }

  setWakeup(wake: () => void): void {
    this.events.setWakeup(wake);
  }

  async start(): Promise<void> {
    this.logger.info(`${this.name} TaildirSource source starting with directory: ${JSON.stringify(this.options.filegroups)}`);
    for (const m of this.scope.matchers) {
      try {
        const s = await stat(m.directory);
        if (!s.isDirectory()) throw new Error("not a directory");
      } catch {
        throw new ConfigurationError(`filegroups.${m.group}`, `Directory does not exist: ${m.directory}`, this.name);
      }
    }
    const positionFile = this.options.positionFile;
    const owner = positionFileOwners.get(positionFile);
    if (owner !== undefined && owner !== this.name) {
      throw new ConfigurationError("positionFile", `${positionFile} is already used by TAILDIR source ${owner}; give each TAILDIR source its own positionFile`, this.name);
    }
    try {
      mkdirSync(path.dirname(positionFile), { recursive: true });
    } catch (err) {
      throw new ConfigurationError("positionFile", `cannot create the directory ${path.dirname(positionFile)} of positionFile ${positionFile}: ${ioReason(err)}`, this.name);
    }
    try {
      this.lock = OwnerLock.acquire(positionLockFile(positionFile), `positionFile ${positionFile} of TAILDIR source ${this.name}`, `flume-ts TAILDIR source ${this.name}`);
    } catch (err) {
      if (err instanceof LockHeldError || err instanceof LockFileError) throw new ConfigurationError("positionFile", err.message, this.name);
      throw err;
    }
    if (this.lock.tookOverFrom) this.logger.warn(`${this.name}: took over ${this.lock.file} from process ${this.lock.tookOverFrom.pid}, which is no longer running`);
    positionFileOwners.set(positionFile, this.name);
    try {
      this.beginStart();
      const channels = this.getChannelProcessor().getChannels();
      this.scope.durable = channels.some((c) => c.durable === true);
      await this.discovery.restore(channels);
      // Every tracked file is in the state file before any of its lines is read, so a crash
      // followed by a rotation can still find it by inode.
      await this.snapshot();
    } catch (err) {
      this.releaseOwnership();
      throw err;
    }
    this.events.indexPaths();
    this.scope.started = true;
    this.state = "START";
    this.events.start();
    this.schedulePositionWrite();
  }

  /** The runner is stopping: a batch waiting for room gives up (its lines are read again after a restart). */
  interrupt(): void {
    this.emitter.stop();
  }

  async stop(): Promise<void> {
    this.scope.started = false;
    this.emitter.stop();
    if (this.posTimer) this.clock.clearTimeout(this.posTimer);
    this.posTimer = null;
    this.events.close();
    await this.snapshot();
    for (const f of this.scope.files.values()) await f.release();
    this.scope.files.clear();
    this.releaseOwnership();
    this.counter.stop();
    this.state = "STOP";
    this.logger.info(`Taildir source ${this.name} stopped. Metrics: ${JSON.stringify(this.counter.snapshot())}`);
  }

  private releaseOwnership(): void {
    this.positionKeeper.close();
    this.lock?.release();
    this.lock = null;
    if (positionFileOwners.get(this.options.positionFile) === this.name) positionFileOwners.delete(this.options.positionFile);
  }

  private schedulePositionWrite(): void {
    this.posTimer = this.clock.setTimeout(() => {
      void this.snapshot().finally(() => {
        if (this.scope.started) this.schedulePositionWrite();
      });
    }, this.options.writePosInterval);
  }

  /**
   * Writes the state file and Flume's position file (atomically, flushed) when anything
   * changed since the last time; writes never overlap, a request during one runs after it.
   */
  snapshot(): Promise<void> {
    return this.positionKeeper.snapshot();
  }

  /** Kept for callers of the old name (tests, runners): writes the positions now. */
  writePositions(): Promise<void> {
    return this.snapshot();
  }

  process(): Promise<Status> {
    return this.reader.process();
  }
}

function parseHeaders(raw: Record<string, string>): Record<string, Record<string, string>> {
  const out: Record<string, Record<string, string>> = {};
  for (const [k, v] of Object.entries(raw)) {
    const dot = k.indexOf(".");
    if (dot <= 0) continue;
    const group = k.slice(0, dot);
    (out[group] ??= {})[k.slice(dot + 1)] = v;
  }
  return out;
}

/** The position file a configuration names, as the source will use it. */
function positionFileOf(configured: string, ctx: Pick<ComponentContext, "storagePath">): string {
  const expanded = configured.startsWith("~/") ? path.join(homedir(), configured.slice(2)) : configured;
  return path.resolve(ctx.storagePath(expanded));
}

export const definition = defineComponent({
  ...builtIn.taildirSource,
  doc: "Tails files matching regular expressions and keeps their positions in a JSON position file.",
  props: {
    filegroups: { type: "list", required: true, doc: "Space-separated file group names" },
    positionFile: { type: "path", default: "~/.flume/taildir_position.json", doc: "JSON file with the inode, position and path of each tailed file" },
    skipToEnd: { type: "boolean", default: false, doc: "Start files not in the position file at their end" },
    idleTimeout: { type: "int", default: 120000, min: 0, doc: "Milliseconds without new data after which a file is closed" },
    writePosInterval: { type: "int", default: 3000, min: 1, doc: "Milliseconds between writes of the position file" },
    batchSize: { type: "int", roles: ["batchSize"], default: 100, min: 1, doc: "Lines per channel transaction" },
    maxBatchCount: { type: "int", default: Number.MAX_SAFE_INTEGER, doc: "Batches read from one file before moving to the next (<= 0: no limit)" },
    fileHeader: { type: "boolean", default: false, doc: "Add the file's absolute path as a header" },
    fileHeaderKey: { type: "string", default: "file", doc: "Header name for fileHeader" },
    byteOffsetHeader: { type: "boolean", default: false, doc: "Add the line's byte offset as header 'byteoffset'" },
    cachePatternMatching: { type: "boolean", default: true, doc: "List a directory again only when its modification time changes" },
    backoffSleepIncrement: { type: "int", default: 1000, min: 0, doc: "Added to the sleep after each poll without new lines (ms)" },
    maxBackoffSleep: { type: "int", default: 5000, min: 0, doc: "Longest sleep between polls without new lines (ms); file-system events end it early" },
    "positionFile.onCorrupt": {
      type: "enum",
      values: ["reset", "fail"],
      default: "reset",
      doc: "Flume TS extension: a positionFile (or its .state file) that cannot be read is renamed aside (<file>.corrupt-<time>) and every file read anew (reset), or the source refuses to start (fail). Flume logs an error and overwrites it",
    },
    maxLineLength: {
      type: "int",
      default: 16 * 1024 * 1024,
      min: 1,
      doc: "Flume TS extension: longest line in bytes held in memory; longer lines are emitted in pieces",
    },
  },
  groups: {
    filegroupPaths: { prefix: "filegroups.", doc: "filegroups.<group> = /dir/regex: the directory and a regex on file names" },
    headers: { prefix: "headers.", doc: "headers.<group>.<key> = value: a header added to the group's events" },
  },
  claims(config, ctx) {
    const positionFile = positionFileOf(config.positionFile, ctx);
    return [{ file: positionLockFile(positionFile), what: `positionFile ${positionFile}` }];
  },
  create(config, ctx) {
    const groups = config.filegroups;
    const paths = config.filegroupPaths;
    const filegroups: Record<string, string> = {};
    for (const g of groups) if (paths[g] !== undefined) filegroups[g] = paths[g];
    if (Object.keys(filegroups).length === 0) {
      throw new ConfigurationError("filegroups", `Mapping for tailing files is empty or invalid: 'filegroups.' (groups: ${groups.join(" ") || "none"})`, ctx.name);
    }
    const maxBatchCount = config.maxBatchCount;
    if (maxBatchCount <= 0) ctx.logger.warn(`${ctx.name}: Invalid maxBatchCount specified, using no limit`);
    return new TaildirSource(ctx, {
      filegroups,
      headers: parseHeaders(config.headers),
      positionFile: positionFileOf(config.positionFile, ctx),
      skipToEnd: config.skipToEnd,
      idleTimeout: config.idleTimeout,
      writePosInterval: config.writePosInterval,
      batchSize: config.batchSize,
      maxBatchCount: maxBatchCount <= 0 ? Number.MAX_SAFE_INTEGER : maxBatchCount,
      fileHeader: config.fileHeader,
      fileHeaderKey: config.fileHeaderKey,
      byteOffsetHeader: config.byteOffsetHeader,
      cachePatternMatching: config.cachePatternMatching,
      maxLineLength: config.maxLineLength,
      backoffSleepIncrement: config.backoffSleepIncrement,
      maxBackoffSleep: config.maxBackoffSleep,
      onCorrupt: config["positionFile.onCorrupt"],
    });
  },
  validate(config) {
    const errors: { key: string; message: string }[] = [];
    // A position file the agent cannot write would fail every start (and every later write).
    const positionFile = positionFileOf(config.positionFile, { storagePath: (p) => p });
    const unwritable = unwritableDirectory(path.dirname(positionFile));
    if (unwritable) errors.push({ key: "positionFile", message: `the agent cannot keep positionFile ${positionFile} in its directory ${path.dirname(positionFile)}: ${unwritable}` });
    const paths = config.filegroupPaths;
    for (const g of config.filegroups) {
      if (paths[g] === undefined) {
        errors.push({ key: `filegroups.${g}`, message: `group "${g}" is listed in filegroups but has no filegroups.${g} path` });
        continue;
      }
      try {
        new FileGroupMatcher(g, paths[g], true);
      } catch (err) {
        errors.push({ key: `filegroups.${g}`, message: (err as Error).message.replace(/^filegroups\.[^:]*: /, "") });
      }
    }
    return errors;
  },
});
