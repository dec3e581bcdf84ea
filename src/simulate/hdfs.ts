/**
 * The simulated HDFS and the part that replaces sinks whose definition declares a fileStore
 * (hdfs). The sink writes each taken batch into its open file (named with the in-use prefix and
 * suffix), durably (hflush) before it commits, and rolls the file on count, size, interval and
 * idleness (hdfs.idleTimeout):
 * a roll closes the file and renames it to its final name, both NameNode operations.
 *
 * Faults: --namenode-down windows (no file is created, closed or renamed: a batch that needs a
 * new file fails before it writes, a roll's close is retried every hdfs.retryInterval, the file
 * stays in use meanwhile), --hdfs-fail-close (a close or rename fails, and is retried),
 * --hdfs-timeout (a write lands but answers after hdfs.callTimeout: the sink rolls back, closes
 * the file and writes the batch again into a new one: hdfs-timeout duplicates), and --fail-sink
 * (the write fails after part of the batch reached the file: partial-batch duplicates).
 * A crash leaves the open file in use; the restarted sink renames what it left, as the real one.
 */
import type { Clock } from "../core/clock.ts";
import { SinkCounter } from "../core/counters.ts";
import type { Event } from "../core/event.ts";
import { componentContext } from "../components/component.ts";
import { BaseSink } from "../components/sinks/base.ts";
import type { TakeLoop } from "../pipeline/take-loop.ts";
import type { Epoch, SimWorld } from "./components.ts";
import { simIdOf } from "./event-ids.ts";
import { formatTime } from "./options.ts";
import type { Random } from "./rng.ts";
import type { TracedTransaction } from "./trace.ts";

export interface FileSpec {
  directory: string;
  prefix: string;
  suffix: string;
  inUsePrefix: string;
  inUseSuffix: string;
  batchSize: number;
  rollCount: number;
  rollSize: number;
  rollIntervalMs: number;
  idleTimeoutMs: number;
  callTimeoutMs: number;
  retryIntervalMs: number;
}

interface SimFile {
  /** The final name (directory/prefix.N suffix). */
  name: string;
  inUse: string;
  events: number;
  bytes: number;
  closed: boolean;
  renamed: boolean;
  closeTries: number;
}

export class HdfsFailureError extends Error {
  override name = "HdfsFailureError";
}

/** The simulated file system: its files, its NameNode's outages and failing closes. */
export class SimFileSystem {
  readonly files: SimFile[] = [];
  writes = 0;
  failedOpens = 0;
  failedCloses = 0;
  timeouts = 0;

  constructor(
    private readonly clock: Clock,
    private readonly down: readonly { from: number; to: number }[],
    readonly failClose: number,
    readonly timeout: number,
    readonly random: Random,
  ) {}

  /** Why the NameNode does not answer now, or null. */
  nameNodeDown(): string | null {
    const now = this.clock.now();
    const w = this.down.find((d) => now >= d.from && now < d.to);
    return w ? `NameNode unavailable (${formatTime(w.from)} to ${formatTime(w.to)})` : null;
  }

  create(name: string, inUse: string): SimFile {
    const f: SimFile = { name, inUse, events: 0, bytes: 0, closed: false, renamed: false, closeTries: 0 };
    this.files.push(f);
    return f;
  }

  /** Closes and renames f; false when the NameNode refused (f stays in use). */
  closeAndRename(f: SimFile): boolean {
    f.closeTries++;
    if (this.nameNodeDown() !== null || (this.failClose > 0 && this.random() < this.failClose)) {
      this.failedCloses++;
      return false;
    }
    f.closed = true;
    f.renamed = true;
    return true;
  }

  /** Files of a directory still in use (their writer closed none of them). */
  inUse(prefix: string): SimFile[] {
    return this.files.filter((f) => !f.renamed && f.name.startsWith(prefix));
  }

  describe(): string[] {
    if (this.files.length === 0 && this.writes === 0) return [];
    const renamed = this.files.filter((f) => f.renamed).length;
    const names = (fs: SimFile[]) => (fs.length > 0 ? ` (${fs.slice(0, 2).map((f) => f.inUse).join(", ")}${fs.length > 2 ? ", ..." : ""})` : "");
    const open = this.files.filter((f) => !f.renamed && f.closeTries === 0);
    const stuck = this.files.filter((f) => !f.renamed && f.closeTries > 0);
    const events = this.files.reduce((n, f) => n + f.events, 0);
    return [
      `hdfs: ${this.files.length} files written (${events.toLocaleString("en-US")} events in ${this.writes} writes), ${renamed} closed and renamed, ${open.length} open when the run ended${names(open)}, ${stuck.length} left in use by a failed close${names(stuck)}; ${this.failedOpens} creates refused, ${this.failedCloses} closes or renames failed (retried), ${this.timeouts} writes past callTimeout`,
    ];
  }
}

/** An hdfs sink on the simulated file system. */
export class SimHdfsSink extends BaseSink {
  override readonly counter: SinkCounter;
  protected readonly takeLoop: TakeLoop;
  private file: SimFile | null = null;
  private rollTimer: ReturnType<Clock["setTimeout"]> | null = null;
  private idleTimer: ReturnType<Clock["setTimeout"]> | null = null;
  private readonly base: string;

  constructor(
    name: string,
    private readonly spec: FileSpec,
    private readonly fs: SimFileSystem,
    /** File numbers of this sink, across restarts (the real sink numbers files by its clock). */
    private readonly counterOf: { n: number },
    private readonly latency: number,
    private readonly epoch: Epoch,
    private readonly world: SimWorld,
  ) {
    super(componentContext(name, { clock: epoch }));
    this.counter = new SinkCounter(name, epoch);
    this.base = `${spec.directory.replace(/\/+$/, "")}/${spec.prefix}`;
    this.takeLoop = this.newTakeLoop({
      counter: this.counter,
      batchSize: spec.batchSize,
      underflow: "READY",
      deliver: (events, tx) => this.write(events, tx as TracedTransaction),
    });
  }

  override start(): void {
    // As the real sink: files a killed run left in use are closed and renamed at start.
    for (const f of this.fs.inUse(this.base)) if (f !== this.file) this.closeLater(f, 0);
    super.start();
  }

  private open(): SimFile {
    const down = this.fs.nameNodeDown();
    if (down !== null) {
      this.fs.failedOpens++;
      throw new HdfsFailureError(`cannot create a file in ${this.spec.directory}: ${down}`);
    }
    const n = ++this.counterOf.n;
    const name = `${this.base}.${n}${this.spec.suffix}`;
    const slash = name.lastIndexOf("/");
    const f = this.fs.create(name, `${name.slice(0, slash + 1)}${this.spec.inUsePrefix}${name.slice(slash + 1)}${this.spec.inUseSuffix}`);
    if (this.spec.rollIntervalMs > 0) this.rollTimer = this.epoch.setTimeout(() => this.roll(f), this.spec.rollIntervalMs);
    return f;
  }

  /** Closes the open file (its close and rename retried until they succeed). */
  private roll(f: SimFile): void {
    if (this.file !== f) return;
    this.file = null;
    if (this.rollTimer !== null) this.epoch.clearTimeout(this.rollTimer);
    if (this.idleTimer !== null) this.epoch.clearTimeout(this.idleTimer);
    this.rollTimer = null;
    this.idleTimer = null;
    this.closeLater(f, 0);
  }

  private closeLater(f: SimFile, wait: number): void {
    const attempt = (): void => {
      if (f.renamed || !this.epoch.alive) return;
      if (!this.fs.closeAndRename(f)) this.closeLater(f, Math.max(1000, this.spec.retryIntervalMs));
    };
    if (wait === 0) attempt();
    else this.epoch.setTimeout(attempt, wait);
  }

  private async write(taken: readonly Event[], tx: TracedTransaction): Promise<void> {
    const batch = ++this.world.sinkBatches;
    const w = this.world;
    const fail = w.sinkFail.kind !== "none" && (w.sinkFail.kind === "batches" ? w.sinkFail.batches.has(batch) : w.sinkRandom() < w.sinkFail.rate);
    const late = this.fs.timeout > 0 && this.fs.random() < this.fs.timeout;
    const f = this.file ?? (this.file = this.open());
    if (this.latency > 0) await this.epoch.sleep(this.latency);
    const ids = taken.map(simIdOf);
    const reached = fail ? Math.floor(w.partialRandom() * taken.length) : taken.length;
    if (reached > 0) {
      let bytes = 0;
      for (let k = 0; k < reached; k++) bytes += taken[k].body.length;
      f.events += reached;
      f.bytes += bytes;
      this.fs.writes++;
      w.delivered(tx, this.name, ids.slice(0, reached));
    }
    if (fail) {
      w.say(ids, `writing batch ${batch} into ${f.inUse} failed after ${reached} of ${taken.length} events reached the file; sink ${this.name} rolls back`);
      this.roll(f);
      throw new HdfsFailureError(`simulated failure writing ${f.inUse}: ${reached} of ${taken.length} events reached the file`);
    }
    if (late) {
      this.fs.timeouts++;
      await this.epoch.sleep(this.spec.callTimeoutMs);
      w.resendTag(tx, ids, "hdfs-timeout", false);
      w.say(ids, `the write into ${f.inUse} landed, but answered after callTimeout ${this.spec.callTimeoutMs} ms; sink ${this.name} rolls back`);
      this.roll(f);
      throw new HdfsFailureError(`write into ${f.inUse} timed out after callTimeout ${this.spec.callTimeoutMs} ms (it had landed)`);
    }
    const ack = Math.ceil(this.latency / 2);
    if (ack > 0) await this.epoch.sleep(ack);
    const s = this.spec;
    if ((s.rollCount > 0 && f.events >= s.rollCount) || (s.rollSize > 0 && f.bytes >= s.rollSize)) this.roll(f);
    else if (s.idleTimeoutMs > 0) {
      // hdfs.idleTimeout: a file without a write for that long is closed.
      if (this.idleTimer !== null) this.epoch.clearTimeout(this.idleTimer);
      this.idleTimer = this.epoch.setTimeout(() => this.roll(f), s.idleTimeoutMs);
    }
  }
}
