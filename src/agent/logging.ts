/**
 * The agent's log: one line per message on stderr (stdout stays free for data), each with a
 * timestamp, level and component; as text or one JSON object a line. Colour only on a TTY
 * without NO_COLOR. A message a component repeats (an error at every poll) is written once,
 * then counted: "repeated N times" right after the lines it folds (before any other line is
 * written) or once a minute. A component's output (the logger sink's events) is never folded.
 */
import type { Logger } from "../core/logger.ts";
import { colorEnabled } from "../io/terminal.ts";

export type LogLevel = "error" | "warn" | "info" | "debug" | "trace";
export type LogFormat = "text" | "json";

export const LOG_LEVELS: readonly LogLevel[] = ["error", "warn", "info", "debug", "trace"];

/** How verbose each level is: a line is written when its rank is at most the configured one's. */
const RANK: Record<LogLevel, number> = { error: 0, warn: 1, info: 3, debug: 4, trace: 5 };

export interface AgentLogOptions {
  level?: LogLevel;
  format?: LogFormat;
  /** Where lines go (default: stderr). */
  write?: (line: string) => void;
  /** Colour the level word (default: stderr is a TTY and NO_COLOR is unset). */
  color?: boolean;
  /** The agent's name, in JSON lines. */
  agent?: string;
  now?: () => Date;
}

/** The agent's logger: Flume's levels, success (written as INFO), and a tagged logger per component. */
export interface AgentLogger extends Logger {
  success(message: string, ...args: unknown[]): void;
  trace(message: string, ...args: unknown[]): void;
  withTag(tag: string): AgentLogger;
}

const COLORS: Record<string, string> = { ERROR: "\x1b[31m", WARN: "\x1b[33m", INFO: "\x1b[36m", DEBUG: "\x1b[90m", TRACE: "\x1b[90m" };
const REPEAT_FLUSH_MS = 60_000;

function messageOf(message: string, args: unknown[]): string {
  const parts = [message, ...args].map((a) => (typeof a === "string" ? a : a instanceof Error ? a.message : JSON.stringify(a)));
  return parts.join(" ").replace(/\s*\n\s*/g, " | ");
}

/** Writes our line format, with repeated messages folded; shared by the agent's logger and its tagged ones. */
class LineWriter {
  /**
   * The line last written, while it may fold the next ones: only consecutive lines fold, so the
   * count of repeats is written before any other line and reads as about the line above it.
   */
  private last: { component: string; text: string; level: string; repeats: number; since: number } | null = null;
  private readonly rank: number;

  constructor(private readonly o: Required<Omit<AgentLogOptions, "agent" | "level">> & { agent?: string; level: LogLevel }) {
    this.rank = RANK[o.level];
  }

  /** fold: false for data (a sink's output), which is written every time and folds nothing after it. */
  log(rank: number, level: string, component: string, message: string, args: unknown[], fold = true): void {
    if (rank > this.rank) return;
    const text = messageOf(message, args);
    const at = this.o.now();
    const prev = this.last;
    if (fold && prev && prev.component === component && prev.text === text && prev.level === level) {
      prev.repeats++;
      if (at.getTime() - prev.since >= REPEAT_FLUSH_MS) {
        this.flushRepeats(at);
        prev.since = at.getTime();
      }
      return;
    }
    this.flushRepeats(at);
    this.last = fold ? { component, text, level, repeats: 0, since: at.getTime() } : null;
    this.emit(level, component, text, at);
  }

  private emit(level: string, component: string, message: string, at: Date): void {
    const o = this.o;
    if (o.format === "json") {
      o.write(`${JSON.stringify({ time: at.toISOString(), level: level.toLowerCase(), ...(o.agent ? { agent: o.agent } : {}), ...(component ? { component } : {}), message })}\n`);
      return;
    }
    const word = o.color ? `${COLORS[level] ?? ""}${level.padEnd(5)}\x1b[0m` : level.padEnd(5);
    o.write(`${at.toISOString()} ${word} ${component ? `[${component}] ` : ""}${message}\n`);
  }

  private flushRepeats(at: Date): void {
    const prev = this.last;
    if (prev && prev.repeats > 0) this.emit(prev.level, prev.component, `(the last message repeated ${prev.repeats} more time${prev.repeats === 1 ? "" : "s"})`, at);
    if (prev) prev.repeats = 0;
  }
}

/** Methods are bound (callers pass `log.warn` around, as consola allowed). */
class TaggedLogger implements AgentLogger {
  constructor(
    private readonly out: LineWriter,
    private readonly tag: string,
  ) {}
  readonly error = (message: string, ...args: unknown[]): void => this.out.log(0, "ERROR", this.tag, message, args);
  readonly warn = (message: string, ...args: unknown[]): void => this.out.log(1, "WARN", this.tag, message, args);
  readonly info = (message: string, ...args: unknown[]): void => this.out.log(3, "INFO", this.tag, message, args);
  readonly success = (message: string, ...args: unknown[]): void => this.out.log(3, "INFO", this.tag, message, args);
  readonly debug = (message: string, ...args: unknown[]): void => this.out.log(4, "DEBUG", this.tag, message, args);
  readonly trace = (message: string, ...args: unknown[]): void => this.out.log(5, "TRACE", this.tag, message, args);
  readonly output = (message: string): void => this.out.log(3, "INFO", this.tag, message, [], false);
  withTag(tag: string): AgentLogger {
    return new TaggedLogger(this.out, tag);
  }
}

/** Whether fd 2 is a terminal, asked without making process.stderr (a stream costs memory the agent does not need). */
function stderrIsTty(): boolean {
  try {
    return (process.getBuiltinModule("node:tty") as typeof import("node:tty")).isatty(2);
  } catch {
    return false;
  }
}

/**
 * Writes to fd 2. Under Bun a file sink (non-blocking, flushed at once) rather than
 * process.stderr, whose stream machinery costs megabytes at start; elsewhere process.stderr.
 */
function stderrWriter(): (line: string) => void {
  const bun = (globalThis as { Bun?: { stderr: { writer(): { write(s: string): number; flush(): unknown } } } }).Bun;
  if (!bun) return (line) => process.stderr.write(line);
  const sink = bun.stderr.writer();
  return (line) => {
    sink.write(line);
    sink.flush();
  };
}

/** The agent's logger. */
export function createAgentLogger(options: AgentLogOptions = {}): AgentLogger {
  const out = new LineWriter({
    level: options.level ?? "info",
    format: options.format ?? "text",
    write: options.write ?? stderrWriter(),
    color: options.color ?? colorEnabled({ isTTY: stderrIsTty() }),
    now: options.now ?? (() => new Date()),
    agent: options.agent,
  });
  return new TaggedLogger(out, "");
}

/** A component's logger: the agent logger tagged with the component's name. */
export function componentLogger(base: AgentLogger, name: string): Logger {
  return base.withTag(name);
}

/**
 * The level asked for by Flume's `-Dflume.root.logger=LEVEL,console` (log4j names: FATAL,
 * ERROR, WARN, INFO, DEBUG, TRACE, ALL, OFF), or undefined when it names none we know.
 */
export function levelFromFlumeRootLogger(value: string): LogLevel | undefined {
  const word = value.split(",")[0].trim().toUpperCase();
  switch (word) {
    case "FATAL":
    case "ERROR":
    case "OFF":
      return "error";
    case "WARN":
      return "warn";
    case "INFO":
      return "info";
    case "DEBUG":
      return "debug";
    case "TRACE":
    case "ALL":
      return "trace";
    default:
      return undefined;
  }
}
