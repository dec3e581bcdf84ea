/**
 * Flume's HDFS sink (HDFSEventSink, type hdfs): writes events into files on HDFS through
 * Hadoop's native protocols (hdfs:// paths), WebHDFS (webhdfs:// paths) or on the local file
 * system (file:// paths), bucketed by the escaped hdfs.path and filePrefix, rolled on count,
 * size, interval and idleness.
 *
 * A take commits only after its batch is durable: each bucket's share of the batch is hflushed
 * through the open file's DataNode pipeline (src/io/hdfs/native/), or one WebHDFS CREATE or
 * APPEND that the DataNodes acknowledged and closed (src/io/hdfs/webhdfs.ts).
 * At start the sink renames the in-use files a killed run of it left in hdfs.path's literal
 * directory (found by the mark it sets on each file); a bucket opened later in another
 * directory does the same there.
 */
import { userInfo, hostname } from "node:os";
import type { OptionsOf } from "../../../config/schema.ts";
import type { TimerHandle } from "../../../core/clock.ts";
import { SinkCounter } from "../../../core/counters.ts";
import { ConfigurationError, configurationProblems, FlumeError } from "../../../core/errors.ts";
import type { Status } from "../../../core/sink.ts";
import type { DfsClient } from "../../../io/hdfs/file-system.ts";
import { type HadoopConf, readHadoopConf } from "../../../io/hdfs/hadoop-conf.ts";
import { type DfsTarget, openDfsClient } from "../../../io/hdfs/open.ts";
import { EscapeTemplate, Escaper, type EscapeOptions, lookupHostNames, type RoundUnit } from "../../../pipeline/bucket-path.ts";
import type { TakeLoop } from "../../../pipeline/take-loop.ts";
import { createPart, defineComponent, type ComponentContext } from "../../component.ts";
import { builtIn } from "../../registry.ts";
import { localAddress } from "../../interceptors/host.ts";
import type { SerializerFactory } from "../../serializers/serializer.ts";
import { BaseSink } from "../base.ts";
import { type BucketOptions, RenameRetries, WRITER_MARK } from "./bucket-writer.ts";
import { stripSlash, WriterLane } from "./lane.ts";
import { type Codec, type CompressionType, type FileType, findCodec } from "./formats.ts";

export interface HdfsSinkOptions {
  /** Where the files go: a NameNode (RPC or WebHDFS), or the local file system. */
  target: DfsTarget;
  /** hdfs.path's path part (no scheme), a template. */
  path: string;
  filePrefix: string;
  fileSuffix: string;
  inUsePrefix: string;
  inUseSuffix: string;
  rollInterval: number;
  rollSize: number;
  rollCount: number;
  idleTimeout: number;
  batchSize: number;
  codec: Codec | null;
  compressionType: CompressionType;
  fileType: FileType;
  writeFormat: "Writable" | "Text";
  maxOpenFiles: number;
  /** Takes written at once (lanes), each to its own files. */
  concurrentBatches: number;
  escape: EscapeOptions;
  closeTries: number;
  retryInterval: number;
  callTimeout: number;
  user: string;
  proxyUser?: string;
  serializer: SerializerFactory;
}

/** What the lanes of one sink share. */
export interface SinkShared {
  readonly name: string;
  readonly options: HdfsSinkOptions;
  readonly fs: DfsClient;
  readonly escaper: Escaper;
  readonly templates: { path: EscapeTemplate; prefix: EscapeTemplate; suffix: EscapeTemplate };
  /** Per bucket key: the file counter all lanes' writers of that bucket share, so names never collide. */
  readonly counters: Map<string, { value: number }>;
  bucketOptions(suffix: string): BucketOptions;
  /** Renames this sink's in-use files a killed run left in dir (once per directory). */
  recover(dir: string): Promise<void>;
}

/** The agent stopped while the sink started: the start gave up its wait on HDFS. */
export class HdfsStartAbortedError extends FlumeError {}

export class HdfsSink extends BaseSink {
  override readonly counter: SinkCounter;
  protected readonly takeLoop: TakeLoop;
  private readonly templates: SinkShared["templates"];
  private shared: SinkShared | null = null;
  /** The file system of the current start, set before its first wait so that abortStart reaches it. */
  private fs: DfsClient | null = null;
  /** Armed when the sink is told to stop: what HDFS has not finished within hdfs.callTimeout is given up. */
  private stopDeadline: TimerHandle | null = null;
  /** Set by abortStart: the start under way fails once its wait on HDFS ended. */
  private startAborted = false;
  /** Renames of files whose write or close failed, waiting for their next try. */
  private readonly renameRetries: RenameRetries;
  private readonly lanes: WriterLane[] = [];
  /** Lanes not writing a batch now. */
  private readonly free: WriterLane[] = [];
  private readonly inFlight = new Set<Promise<void>>();
  /** A failure of a batch that ran while process() had returned: thrown by the next process(). */
  private laneError: unknown = null;
  private lastStatus: Status = "READY";
  /** Directories whose left-over in-use files were looked for. */
  private readonly recovered = new Set<string>();
  private readonly writerMark: string;

  constructor(
    ctx: ComponentContext,
    readonly options: HdfsSinkOptions,
  ) {
    super(ctx);
    this.counter = new SinkCounter(ctx.name, ctx.clock);
    this.renameRetries = new RenameRetries(ctx.clock);
    this.templates = {
      path: new EscapeTemplate(options.path, "hdfs.path"),
      prefix: new EscapeTemplate(options.filePrefix, "hdfs.filePrefix"),
      suffix: new EscapeTemplate(options.fileSuffix, "hdfs.fileSuffix"),
    };
    this.writerMark = `${hostname()}/${ctx.agentName}/${ctx.name}`;
    for (let i = 0; i < options.concurrentBatches; i++) {
      const lane = new WriterLane(i, () => this.shared as SinkShared, this.clock, this.logger, this.counter);
      lane.takeLoop = this.newTakeLoop({
        counter: this.counter,
        batchSize: options.batchSize,
        target: () => `${this.fs?.label ?? ""}${options.path}`,
        deliver: (events) => lane.serial(() => lane.deliver(events)),
      });
      this.lanes.push(lane);
      this.free.push(lane);
    }
    this.takeLoop = this.lanes[0].takeLoop as TakeLoop;
  }

  /** The files being written now (in-use names), for tests and status. */
  currentFiles(): string[] {
    return this.lanes.flatMap((l) => l.openPaths());
  }

  override async start(): Promise<void> {
    const o = this.options;
    const fs = openDfsClient(o.target, { user: o.user, proxyUser: o.proxyUser, timeoutMs: o.callTimeout });
    this.fs = fs;
    this.startAborted = false;
    this.renameRetries.start();
    const hosts = await lookupHostNames(localAddress);
    this.shared = {
      name: this.name,
      options: o,
      fs,
      escaper: new Escaper(o.escape, hosts, () => this.clock.now()),
      templates: this.templates,
      counters: new Map(),
      bucketOptions: (suffix) => this.bucketOptions(suffix),
      recover: (dir) => this.recover(dir),
    };
    this.laneError = null;
    this.logger.info(`hdfs sink ${this.name}: writing ${o.fileType} files to ${fs.label}${o.path} as ${o.user}${o.proxyUser ? ` (proxy for ${o.proxyUser})` : ""}`);
    const p = this.templates.path;
    const literalDir = p.fixedPrefix.slice(0, p.isLiteral ? undefined : p.fixedPrefix.lastIndexOf("/") + 1);
    if (literalDir !== "") {
      try {
        await this.lanes[0].serial(() => this.recover(stripSlash(literalDir)));
      } catch (err) {
        if (!this.startAborted) this.logger.warn(`hdfs sink ${this.name}: could not look for in-use files left in ${literalDir}: ${(err as Error).message}`);
      }
    }
    if (this.startAborted) {
      await fs.close();
      throw new HdfsStartAbortedError(`hdfs sink ${this.name}: the agent stopped while the sink started (looking for in-use files left in ${literalDir} on ${fs.label})`);
    }
    this.counter.start();
    this.state = "START";
  }

  /** The agent stops while the sink starts (looking for in-use files left in hdfs.path): given up at once. */
  abortStart(): void {
    // A started sink has no start to give up (its client is in use); a stopped one's is closed.
    if (this.state === "START") return;
    this.startAborted = true;
    this.fs?.abort("the agent stopped while the sink started");
  }

  /** The runner stops: the batch under way and the files' closing get hdfs.callTimeout in all, not each call its own. */
  interrupt(): void {
    this.armStopDeadline();
  }

  private armStopDeadline(): void {
    const fs = this.fs;
    if (fs === null || this.stopDeadline !== null) return;
    const ms = this.options.callTimeout;
    this.stopDeadline = this.clock.setTimeout(() => {
      this.logger.warn(
        `hdfs sink ${this.name}: stopping: ${fs.label} did not finish within hdfs.callTimeout (${ms} ms); a batch under way is rolled back into the channel, files still open are left in use (.tmp) and renamed at the next start`,
      );
      fs.abort(`the sink stopped: no answer within hdfs.callTimeout (${ms} ms)`);
    }, ms);
  }

  /** A stopped sink tries no rename again (its client is closed): the next start renames those files, as after a kill. */
  private cancelRenameRetries(): void {
    const left = this.renameRetries.stop();
    if (left > 0) this.logger.warn(`hdfs sink ${this.name}: ${left} in-use file(s) whose rename failed are left for the next start, which renames them`);
  }

  override async stop(): Promise<void> {
    // Also called after a start that failed (its runner cleans up before the retry): nothing started to report.
    const started = this.state === "START";
    this.state = "STOP";
    this.armStopDeadline();
    try {
      while (this.inFlight.size > 0) await Promise.race(this.inFlight);
      for (const lane of this.lanes) await lane.closeAll();
      await this.fs?.close();
    } finally {
      if (this.stopDeadline !== null) this.clock.clearTimeout(this.stopDeadline);
      this.stopDeadline = null;
      this.cancelRenameRetries();
    }
    if (!started) return;
    this.counter.stop();
    this.logger.info(`hdfs sink ${this.name} stopped. Event metrics: ${JSON.stringify(this.counter.snapshot())}`);
  }

  /**
   * One lane: a take, its write, its commit. With concurrentBatches > 1, a batch runs on a free
   * lane while process() returns, so several takes are written at once, each to its own files;
   * each still commits only after its own write is durable.
   */
  override async process(): Promise<Status> {
    if (this.lanes.length === 1) return super.process();
    this.throwLaneError();
    while (this.free.length === 0) await Promise.race(this.inFlight);
    this.throwLaneError();
    const lane = this.free.pop() as WriterLane;
    let status: Status = "READY";
    const run = (lane.takeLoop as TakeLoop)
      .process(this.getChannel())
      .then(
        (s) => {
          status = s;
          this.lastStatus = s;
        },
        (err) => {
          this.laneError ??= err;
        },
      )
      .finally(() => {
        this.inFlight.delete(run);
        this.free.push(lane);
      });
    this.inFlight.add(run);
    // While batches come full, do not wait for this one; otherwise (an empty or short channel,
    // a failure) let the runner see how it went.
    if (this.lastStatus === "READY" && this.free.length > 0) return "READY";
    await run;
    this.throwLaneError();
    return status;
  }

  private throwLaneError(): void {
    const err = this.laneError;
    if (err === null) return;
    this.laneError = null;
    this.lastStatus = "BACKOFF";
    throw err;
  }

  /**
   * Renames the in-use files of this sink (by its mark) that a killed run left in `dir`:
   * their batches were committed, so they are complete.
   */
  private async recover(dir: string): Promise<void> {
    if (this.recovered.has(dir)) return;
    const o = this.options;
    if (o.inUsePrefix === "" && o.inUseSuffix === "") return;
    const fs = (this.shared as SinkShared).fs;
    // Listed once per directory; a failed listing (no permission yet) is tried again next time.
    const entries = await fs.list(dir);
    this.recovered.add(dir);
    if (!entries) return;
    const open = new Set(this.lanes.flatMap((l) => l.openPaths()));
    for (const e of entries) {
      if (e.type !== "FILE" || !e.name.startsWith(o.inUsePrefix) || !e.name.endsWith(o.inUseSuffix)) continue;
      const file = `${dir}/${e.name}`;
      if (open.has(file)) continue;
      const target = `${dir}/${e.name.slice(o.inUsePrefix.length, e.name.length - o.inUseSuffix.length)}`;
      if ((await fs.getMark(file, WRITER_MARK)) !== this.writerMark) continue;
      if (await fs.rename(file, target)) this.logger.info(`hdfs sink ${this.name}: renamed ${file}, left in use by a previous run, to ${target}`);
    }
  }

  private bucketOptions(suffix: string): BucketOptions {
    const o = this.options;
    return {
      rollInterval: o.rollInterval,
      rollSize: o.rollSize,
      rollCount: o.rollCount,
      idleTimeout: o.idleTimeout,
      inUsePrefix: o.inUsePrefix,
      inUseSuffix: o.inUseSuffix,
      suffix: suffix !== "" ? suffix : (o.codec?.extension ?? ""),
      format: { fileType: o.fileType, codec: o.codec, compressionType: o.compressionType, writeFormat: o.writeFormat, serializer: o.serializer, now: () => this.clock.now() },
      writerMark: this.writerMark,
      closeTries: o.closeTries,
      retryInterval: o.retryInterval,
      renameRetries: this.renameRetries,
    };
  }
}

const props = {
  "hdfs.path": { type: "string", required: true, doc: "Directory URI, with escapes: hdfs://namenode:8020/flume/%Y%m%d, webhdfs://namenode:9870/..., file:///..., or a path on fs.defaultFS of $HADOOP_CONF_DIR/core-site.xml" },
  "hdfs.filePrefix": { type: "string", default: "FlumeData", doc: "Name prefix of the files (escapes allowed)" },
  "hdfs.fileSuffix": { type: "string", default: "", doc: "Name suffix of the files, e.g. .avro (escapes allowed); the codec's extension when empty" },
  "hdfs.inUsePrefix": { type: "string", default: "", doc: "Prefix of files being written" },
  "hdfs.inUseSuffix": { type: "string", default: ".tmp", doc: "Suffix of files being written" },
  "hdfs.emptyInUseSuffix": { type: "boolean", default: false, doc: "Write files under their final name (inUseSuffix ignored)" },
  "hdfs.rollInterval": { type: "int", default: 30, min: 0, doc: "Seconds before a file is rolled; 0 never rolls on time" },
  "hdfs.rollSize": { type: "int", default: 1024, min: 0, doc: "Bytes of event bodies before a file is rolled; 0 never rolls on size" },
  "hdfs.rollCount": { type: "int", default: 10, min: 0, doc: "Events before a file is rolled; 0 never rolls on count" },
  "hdfs.idleTimeout": { type: "int", default: 0, min: 0, doc: "Seconds without a write before a file is closed; 0 never" },
  "hdfs.batchSize": { type: "int", default: 100, min: 1, roles: ["batchSize"], doc: "Events taken per transaction; each bucket's share is written with one durable HDFS write" },
  "hdfs.codeC": { type: "string", default: "", doc: "Compression codec: gzip, bzip2, snappy, lz4, default (zlib), deflate; none when empty" },
  "hdfs.compressionType": { type: "enum", values: ["BLOCK", "RECORD"], default: "BLOCK", doc: "Flume TS: SequenceFile compression with codeC, of blocks of records (Flume's) or of each value" },
  "hdfs.fileType": { type: "enum", values: ["SequenceFile", "DataStream", "CompressedStream"], default: "SequenceFile", doc: "SequenceFile, DataStream (uncompressed) or CompressedStream (needs codeC)" },
  "hdfs.writeFormat": { type: "enum", values: ["Writable", "Text"], default: "Writable", doc: "SequenceFile values: BytesWritable (Writable) or Text" },
  "hdfs.maxOpenFiles": { type: "int", default: 5000, min: 1, doc: "Open buckets at most; the least recently used is closed beyond" },
  "hdfs.minBlockReplicas": { type: "int", default: 0, min: 0, doc: "Accepted for Flume compatibility: each batch is acknowledged by every DataNode of the pipeline" },
  "hdfs.round": { type: "boolean", default: false, doc: "Round the event time down (for the path's time escapes)" },
  "hdfs.roundValue": { type: "int", default: 1, min: 1, doc: "Round down to a multiple of this many units" },
  "hdfs.roundUnit": { type: "enum", values: ["second", "minute", "hour"], default: "second", doc: "Unit of rounding: second, minute or hour" },
  "hdfs.timeZone": { type: "string", default: "", doc: "Time zone of the time escapes (e.g. UTC, America/Los_Angeles); the local one when empty" },
  "hdfs.useLocalTimeStamp": { type: "boolean", default: false, doc: "Use the agent's clock instead of the timestamp header for the time escapes" },
  "hdfs.closeTries": { type: "int", default: 0, min: 0, doc: "Times a failed rename at close is tried; 0 tries until it works" },
  "hdfs.retryInterval": { type: "int", default: 180, min: 0, doc: "Seconds between tries of a failed close" },
  "hdfs.callTimeout": { type: "int", default: 30000, min: 1, doc: "Milliseconds allowed for one HDFS operation" },
  "hdfs.threadsPoolSize": { type: "int", default: 10, min: 1, doc: "Accepted for Flume compatibility (operations run on the event loop)" },
  "hdfs.rollTimerPoolSize": { type: "int", default: 1, min: 1, doc: "Accepted for Flume compatibility (roll timers run on the event loop)" },
  "hdfs.kerberosPrincipal": { type: "string", default: "", doc: "Not supported: Flume TS reaches HDFS with simple authentication only" },
  "hdfs.kerberosKeytab": { type: "string", default: "", doc: "Not supported: Flume TS reaches HDFS with simple authentication only" },
  "hdfs.proxyUser": { type: "string", default: "", doc: "Write as this user (a proxy user; WebHDFS doas); the NameNode must allow the agent's user to impersonate it (hadoop.proxyuser.*)" },
  "hdfs.concurrentBatches": { type: "int", default: 1, min: 1, max: 64, doc: "Flume TS: takes written at once, each to its own files and committed after its own write (helps webhdfs://, which pays a file close per batch)" },
  "hdfs.webhdfs.port": { type: "int", default: 0, min: 0, max: 65535, doc: "Ignored, accepted so older Flume TS configs load: hdfs:// paths use Hadoop RPC now; write webhdfs://namenode:9870/dir for WebHDFS" },
  serializer: {
    type: "string",
    default: "TEXT",
    names: { kind: "serializer", settings: "serializerProps" },
    doc: "DataStream and CompressedStream serializer: TEXT, HEADER_AND_TEXT, AVRO_EVENT, a serializer class name, or the module of a custom one",
  },
} as const;

const groups = { serializerProps: { prefix: "serializer.", doc: "Serializer properties, e.g. serializer.appendNewline" } } as const;

type Config = OptionsOf<typeof props, typeof groups>;

/**
 * hdfs.path split into where it goes and its path part. A path without a file system goes to
 * fs.defaultFS of the Hadoop configuration, as in Flume; hdfs:// paths reach the NameNode's RPC
 * port (8020 when the URI names none), webhdfs:// paths its HTTP port (9870).
 */
export function parseHdfsPath(raw: string, hadoop: HadoopConf = readHadoopConf()): { target: HdfsSinkOptions["target"]; path: string } {
  let uri = raw.trim();
  if (uri.startsWith("/")) {
    if (!hadoop.defaultFS) {
      throw new ConfigurationError(
        "hdfs.path",
        `"${raw}" has no file system and no fs.defaultFS was found in ${hadoop.dir}/core-site.xml (set HADOOP_CONF_DIR): write hdfs://namenode:8020/dir, webhdfs://namenode:9870/dir or file:///dir`,
      );
    }
    uri = hadoop.defaultFS.replace(/\/+$/, "") + uri;
  }
  const m = /^([a-zA-Z][\w+.-]*):\/\/([^/]*)(\/.*)?$/.exec(uri);
  if (!m) throw new ConfigurationError("hdfs.path", `"${raw}" is not a URI: write hdfs://namenode:8020/dir, webhdfs://namenode:9870/dir or file:///dir`);
  const [, scheme, authority, path = "/"] = m;
  switch (scheme.toLowerCase()) {
    case "file":
      if (authority !== "") throw new ConfigurationError("hdfs.path", `file URIs name no host: file:///dir, got "${raw}"`);
      return { target: { kind: "local" }, path };
    case "hdfs": {
      if (authority === "") throw new ConfigurationError("hdfs.path", `"${raw}" names no NameNode (hdfs://namenode:8020/dir)`);
      const port = /:(\d+)$/.exec(authority)?.[1];
      const target: DfsTarget = { kind: "hdfs", host: authority.replace(/:\d+$/, "").replace(/^\[(.*)\]$/, "$1"), port: Number(port ?? 8020) };
      if (hadoop.replication) target.replication = hadoop.replication;
      if (hadoop.blockSize) target.blockSize = hadoop.blockSize;
      return { target, path };
    }
    case "webhdfs":
    case "swebhdfs": {
      if (authority === "") throw new ConfigurationError("hdfs.path", `"${raw}" names no NameNode (webhdfs://namenode:9870/dir)`);
      const secure = scheme.toLowerCase() === "swebhdfs";
      const withPort = /:\d+$/.test(authority) ? authority : `${authority}:${secure ? 9871 : 9870}`;
      return { target: { kind: "webhdfs", nameNode: new URL(`${secure ? "https" : "http"}://${withPort}`) }, path };
    }
    default:
      throw new ConfigurationError("hdfs.path", `file system "${scheme}" is not supported: use hdfs://, webhdfs:// or file://`);
  }
}

/** The options but the serializer (validate resolves that one through the property's `names`). */
function options(config: Config): Omit<HdfsSinkOptions, "serializer"> {
  if (config["hdfs.kerberosPrincipal"] !== "" || config["hdfs.kerberosKeytab"] !== "") {
    throw new ConfigurationError(
      config["hdfs.kerberosPrincipal"] !== "" ? "hdfs.kerberosPrincipal" : "hdfs.kerberosKeytab",
      "Kerberos is not supported: Flume TS reaches HDFS (Hadoop RPC or WebHDFS) with simple authentication only; remove the kerberos keys, or keep this sink on Apache Flume",
    );
  }
  const { target, path } = parseHdfsPath(config["hdfs.path"]);
  const codecName = config["hdfs.codeC"];
  const codec = codecName === "" ? null : findCodec(codecName);
  const fileType = config["hdfs.fileType"] as FileType;
  if (fileType === "DataStream" && codecName !== "") {
    throw new ConfigurationError("hdfs.codeC", "fileType DataStream writes no compressed output: remove codeC, or set fileType = CompressedStream");
  }
  if (fileType === "CompressedStream" && !codec) throw new ConfigurationError("hdfs.codeC", "fileType CompressedStream needs a codec (codeC = gzip)");
  const round = config["hdfs.round"];
  const roundUnit = config["hdfs.roundUnit"] as RoundUnit;
  const roundValue = config["hdfs.roundValue"];
  if (round && roundValue > (roundUnit === "hour" ? 24 : 60)) {
    throw new ConfigurationError("hdfs.roundValue", `must be at most ${roundUnit === "hour" ? 24 : 60} for roundUnit ${roundUnit}`);
  }
  const timeZone = config["hdfs.timeZone"] === "" ? undefined : config["hdfs.timeZone"];
  const escape: EscapeOptions = { timeZone, round, roundUnit, roundValue, useLocalTimeStamp: config["hdfs.useLocalTimeStamp"], timeZoneKey: "hdfs.timeZone", useLocalTimeStampKey: "hdfs.useLocalTimeStamp" };
  // Compile the templates now: a bad escape is a configuration error.
  new EscapeTemplate(path, "hdfs.path");
  new EscapeTemplate(config["hdfs.filePrefix"], "hdfs.filePrefix");
  new Escaper(escape, { localhost: "", ip: "", fqdn: "" }, Date.now);
  return {
    target,
    path,
    filePrefix: config["hdfs.filePrefix"],
    fileSuffix: config["hdfs.fileSuffix"],
    inUsePrefix: config["hdfs.inUsePrefix"],
    inUseSuffix: config["hdfs.emptyInUseSuffix"] ? "" : config["hdfs.inUseSuffix"],
    rollInterval: config["hdfs.rollInterval"],
    rollSize: config["hdfs.rollSize"],
    rollCount: config["hdfs.rollCount"],
    idleTimeout: config["hdfs.idleTimeout"],
    batchSize: config["hdfs.batchSize"],
    codec,
    compressionType: config["hdfs.compressionType"] as CompressionType,
    fileType,
    writeFormat: config["hdfs.writeFormat"] as "Writable" | "Text",
    maxOpenFiles: config["hdfs.maxOpenFiles"],
    concurrentBatches: config["hdfs.concurrentBatches"],
    escape,
    closeTries: config["hdfs.closeTries"],
    retryInterval: config["hdfs.retryInterval"],
    callTimeout: config["hdfs.callTimeout"],
    user: process.env.HADOOP_USER_NAME ?? userInfo().username,
    proxyUser: config["hdfs.proxyUser"] === "" ? undefined : config["hdfs.proxyUser"],
  };
}

export const definition = defineComponent({
  ...builtIn.hdfsSink,
  doc: "Writes events into files on HDFS (Hadoop RPC for hdfs://, WebHDFS for webhdfs://) or a local directory, bucketed by escaped paths and rolled on count, size, time and idleness; SequenceFile, DataStream or CompressedStream.",
  props,
  groups,
  create(config, ctx) {
    return new HdfsSink(ctx, { ...options(config), serializer: createPart<SerializerFactory>(ctx, "serializer", "serializer", config.serializer, config.serializerProps) });
  },
  fileStore: {
    files: (c) => ({
      directory: c["hdfs.path"],
      prefix: c["hdfs.filePrefix"],
      suffix: c["hdfs.fileSuffix"],
      inUsePrefix: c["hdfs.inUsePrefix"],
      inUseSuffix: c["hdfs.emptyInUseSuffix"] ? "" : c["hdfs.inUseSuffix"],
      batchSize: c["hdfs.batchSize"],
      rollCount: c["hdfs.rollCount"],
      rollSize: c["hdfs.rollSize"],
      rollIntervalMs: c["hdfs.rollInterval"] * 1000,
      idleTimeoutMs: c["hdfs.idleTimeout"] * 1000,
      callTimeoutMs: c["hdfs.callTimeout"],
      retryIntervalMs: c["hdfs.retryInterval"] * 1000,
    }),
  },
  validate: (config) => configurationProblems(() => options(config)),
});
