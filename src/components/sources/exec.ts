import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import type { TimerHandle } from "../../core/clock.ts";
import { ConfigurationError } from "../../core/errors.ts";
import { lineEvent, type Event } from "../../core/event.ts";
import type { EventDrivenSource } from "../../core/source.ts";
import { defineComponent, type ComponentContext } from "../component.ts";
import { builtIn } from "../registry.ts";
import { BaseSource } from "./base.ts";
import { LineSplitter } from "../../io/line-splitter.ts";
import { isSupportedInputCharset } from "./spooldir/deserializers.ts";
import { Sleeper } from "../../core/sleeper.ts";
import type { OptionsOf, Props } from "../../config/schema.ts";

const props = {
  command: { type: "string", required: true, doc: "The command to run (split on whitespace unless shell is set)" },
  shell: { type: "string", doc: "Shell to run the command with, e.g. /bin/sh -c" },
  restart: { type: "boolean", default: false, doc: "Run the command again when it exits" },
  restartThrottle: { type: "int", default: 10000, min: 0, doc: "Milliseconds to wait before restarting the command" },
  logStdErr: { type: "boolean", default: false, doc: "Log the command's standard error" },
  batchSize: { type: "int", roles: ["batchSize"], default: 20, min: 1, doc: "Lines per channel transaction" },
  batchTimeout: { type: "int", default: 3000, min: 1, doc: "Milliseconds to wait before sending a batch that is not full" },
  charset: { type: "string", default: "UTF-8", doc: "Charset of the command's output" },
  maxLineLength: { type: "int", default: 16 * 1024 * 1024, min: 1, doc: "Flume TS extension: longest line in bytes; longer lines are emitted in pieces" },
  stopTimeout: {
    type: "int",
    default: 5000,
    min: 0,
    doc: "Flume TS extension: on stop, milliseconds after SIGTERM during which the command's remaining output is still read and delivered; then SIGKILL",
  },
} as const satisfies Props;

/** What the schema parses the properties into. */
export type ExecOptions = OptionsOf<typeof props>;

/** After SIGKILL, how long the pipe is still read (a grandchild outside the group may hold it open). */
const AFTER_KILL_MS = 200;

/**
 * Flume's exec source: runs a command and turns each line of its standard output into an
 * event, in batches of batchSize (or after batchTimeout ms). Unlike Flume, a batch the channel
 * refuses is retried (SourceEmitter.deliver) until it commits, and while it waits the source
 * stops reading the pipe, so the command blocks on its writes instead of lines being lost.
 */
export class ExecSource extends BaseSource implements EventDrivenSource {
  readonly kind = "event-driven";
  private running = false;
  private restart: boolean;
  private loop: Promise<void> | null = null;
  private child: ChildProcess | null = null;
  private batch: Event[] = [];
  /** Body bytes in `batch`. */
  private batchBytes = 0;
  private chain: Promise<void> = Promise.resolve();
  private batchTimer: TimerHandle | null = null;
  private readonly sleeper: Sleeper;

  constructor(
    ctx: ComponentContext,
    readonly options: ExecOptions,
  ) {
    super(ctx);
    this.sleeper = new Sleeper(ctx.clock);
    this.restart = options.restart;
  }

  start(): void {
    this.logger.info(`Exec source starting with command: ${this.options.command}`);
    this.beginStart();
    this.running = true;
    this.restart = this.options.restart;
    this.state = "START";
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.logger.info(`Stopping exec source with command: ${this.options.command}`);
    this.running = false;
    this.restart = false;
    this.sleeper.wake();
    // A batch waiting for room gives up (a pipe cannot be read again); what the command still
    // prints gets one attempt per batch.
    this.emitter.stop();
    this.kill();
    await this.loop;
    this.loop = null;
    this.counter.stop();
    this.state = "STOP";
    this.logger.info(`Exec source with command: ${this.options.command} stopped. Metrics: ${JSON.stringify(this.counter.snapshot())}`);
  }

  /**
   * SIGTERM to the command's process group (a shell's children too). What it prints while
   * shutting down is still read and delivered until its output ends, for up to stopTimeout ms;
   * then SIGKILL, and reading stops shortly after (a grandchild may keep the pipe open).
   */
  private kill(): void {
    const child = this.child;
    if (!child || child.pid === undefined) return;
    const signal = (sig: NodeJS.Signals) => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, sig);
      } catch {
        child.kill(sig);
      }
    };
    const exited = () => child.exitCode !== null || child.signalCode !== null;
    // Output still open after the command exited: something it started in the background holds it.
    const outputOpen = () => child.stdout !== null && !child.stdout.destroyed && !child.stdout.readableEnded;
    if (exited() && !outputOpen()) return;
    signal("SIGTERM");
    let t2: TimerHandle | null = null;
    const t = this.clock.setTimeout(() => {
      if (!exited() || outputOpen()) {
        this.logger.warn(`${this.name}: [${this.options.command}] still running ${this.options.stopTimeout} ms after SIGTERM; sending SIGKILL`);
        signal("SIGKILL");
      }
      t2 = this.clock.setTimeout(() => child.stdout?.destroy(), AFTER_KILL_MS);
    }, this.options.stopTimeout);
    child.once("close", () => {
      this.clock.clearTimeout(t);
      if (t2) this.clock.clearTimeout(t2);
    });
  }


  private async run(): Promise<void> {
    await Promise.resolve();
    do {
      let exit = "unknown";
      try {
        exit = await this.runOnce();
      } catch (err) {
        this.logger.error(`Failed while running command: ${this.options.command}: ${(err as Error).message}`);
      }
      if (this.restart && this.running) {
        this.logger.info(`Restarting in ${this.options.restartThrottle}ms, exit code ${exit}`);
        await this.sleeper.sleep(this.options.restartThrottle);
      } else {
        this.logger.info(`Command [${this.options.command}] exited with ${exit}`);
      }
    } while (this.restart && this.running);
  }

  private argv(): string[] {
    const o = this.options;
    if (o.shell) return [...o.shell.trim().split(/\s+/), o.command];
    return o.command.trim().split(/\s+/);
  }

  /** Runs the command once; resolves with its exit code (or signal) once its output is delivered. */
  private async runOnce(): Promise<string> {
    const [file, ...args] = this.argv();
    // Its own process group, so stop() can signal the command and everything it started.
    const child = spawn(file, args, { stdio: ["ignore", "pipe", "pipe"], detached: true });
    this.child = child;
    let spawnFailed = false;
    const exited = new Promise<string>((resolve) => {
      child.once("error", (err: NodeJS.ErrnoException) => {
        spawnFailed = true;
        const why = err.code === "ENOENT" ? `${file} not found (check the command, shell and PATH)` : err.code === "EACCES" ? `${file} is not executable` : err.message;
        this.logger.error(`Failed while running command: ${this.options.command}: ${why}`);
        resolve("unknown");
      });
      child.once("close", (code, signal) => resolve(code !== null ? String(code) : String(signal)));
    });
    this.readStderr(child);
    const splitter = new LineSplitter({
      maxLineLength: this.options.maxLineLength,
      stripCR: true,
      onOverlong: (length) => this.logger.warn(`${this.name}: line of ${length}+ bytes from [${this.options.command}] exceeds maxLineLength ${this.options.maxLineLength}; emitting it in pieces`),
    });
    const stdout = child.stdout;
    if (stdout) {
      try {
        // Pulling chunks one at a time is the backpressure: while a batch waits for the
        // channel, nothing is read, the pipe fills and the command blocks.
        for await (const chunk of stdout as AsyncIterable<Uint8Array>) {
          splitter.feed(chunk);
          while (splitter.nextSpan()) {
            this.add(splitter.spanBytes, splitter.spanStart, splitter.spanEnd);
            // A byte budget too: batchSize lines of up to maxLineLength bytes each would be
            // 320 MB with the defaults (a command that never writes a newline).
            if (this.batch.length >= this.options.batchSize || this.batchBytes >= this.options.maxLineLength) await this.flush();
          }
        }
      } catch (err) {
        // A command that could not be started has no output: its error was logged once above.
        if (!spawnFailed) this.logger.error(`${this.name}: error reading the output of [${this.options.command}]: ${(err as Error).message}`);
      }
      const last = splitter.flush();
      if (last !== null) this.add(last, 0, last.length);
    }
    await this.flush();
    const code = await exited;
    this.child = null;
    return code;
  }

  /** Queues the line bytes[start..end). */
  private add(bytes: Uint8Array, start: number, end: number): void {
    // A range of the stream's chunk (streams hand out a fresh buffer per chunk): its view is
    // made only if something reads the body.
    this.batch.push(lineEvent(bytes, start, end));
    this.batchBytes += end - start;
    if (this.batch.length === 1 && this.batchTimer === null) {
      this.batchTimer = this.clock.setTimeout(() => {
        this.batchTimer = null;
        void this.flush();
      }, this.options.batchTimeout);
    }
  }

  private readStderr(child: ChildProcess): void {
    const stderr = child.stderr;
    if (!stderr) return;
    const splitter = new LineSplitter({ maxLineLength: 64 * 1024, overlong: "truncate", stripCR: true });
    const decoder = new TextDecoder();
    let i = 0;
    stderr.on("data", (chunk: Uint8Array) => {
      if (!this.options.logStdErr) return;
      splitter.feed(chunk);
      for (let line = splitter.next(); line !== null; line = splitter.next()) {
        this.logger.info(`StderrLogger[${++i}] = '${decoder.decode(line)}'`);
      }
    });
  }

  /** Delivers the current batch after any delivery in progress; one at a time, in order. */
  private flush(): Promise<void> {
    this.chain = this.chain.then(() => this.deliver());
    return this.chain;
  }

  private async deliver(): Promise<void> {
    if (this.batchTimer) {
      this.clock.clearTimeout(this.batchTimer);
      this.batchTimer = null;
    }
    if (this.batch.length === 0) return;
    const events = this.batch;
    this.batch = [];
    this.batchBytes = 0;
    try {
      if (!(await this.emitter.deliver(events))) this.logger.error(`${this.name}: stopping with ${events.length} lines the channel did not take; they are lost`);
    } catch (err) {
      this.emitter.failed(err, `${events.length} lines of [${this.options.command}] dropped`);
    }
  }
}

function validate(config: { command: string; charset: string }): { key: string; message: string }[] {
  const errors: { key: string; message: string }[] = [];
  if (config.command.trim() === "") errors.push({ key: "command", message: "The parameter command must be specified" });
  if (!isSupportedInputCharset(config.charset)) {
    errors.push({ key: "charset", message: `unsupported charset "${config.charset}": lines are cut at byte 0x0A, so it must be UTF-8, US-ASCII, ISO-8859-x or windows-125x` });
  }
  return errors;
}

export const definition = defineComponent({
  ...builtIn.execSource,
  doc: "Runs a command and makes an event of each line it writes to standard output.",
  props,
  create(config, ctx) {
    for (const e of validate(config)) throw new ConfigurationError(e.key, e.message, ctx.name);
    return new ExecSource(ctx, config);
  },
  validate,
});
