/**
 * The agent's log: one line per message on stderr (stdout stays free for data), each with a
 * timestamp, level and component; as text or one JSON object a line. Colour only on a TTY
 * without NO_COLOR. A message a component repeats (an error at every poll) is written once,
 * then counted: "repeated N times" when it changes or once a minute.
 */
import { createConsola } from "consola";
import type { ConsolaInstance, ConsolaReporter, LogObject } from "consola";
import type { Logger } from "../core/logger.ts";
import { colorEnabled } from "../io/terminal.ts";

export type LogLevel = "error" | "warn" | "info" | "debug" | "trace";
export type LogFormat = "text" | "json";

export const LOG_LEVELS: readonly LogLevel[] = ["error", "warn", "info", "debug", "trace"];

/** consola's numeric levels for ours. */
const CONSOLA_LEVEL: Record<LogLevel, number> = { error: 0, warn: 1, info: 3, debug: 4, trace: 5 };

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

/** Our level names for consola's message types. */
function levelOf(o: LogObject): string {
  switch (o.type) {
    case "fatal":
    case "error":
      return "ERROR";
    case "warn":
      return "WARN";
    case "debug":
      return "DEBUG";
    case "trace":
    case "verbose":
      return "TRACE";
    default:
      return "INFO";
  }
}

const COLORS: Record<string, string> = { ERROR: "\x1b[31m", WARN: "\x1b[33m", INFO: "\x1b[36m", DEBUG: "\x1b[90m", TRACE: "\x1b[90m" };
const REPEAT_FLUSH_MS = 60_000;

function messageOf(o: LogObject): string {
  return o.args.map((a) => (typeof a === "string" ? a : a instanceof Error ? a.message : JSON.stringify(a))).join(" ").replace(/\s*\n\s*/g, " | ");
}

/** A consola reporter writing our line format, with repeated messages folded. */
function lineReporter(o: Required<Omit<AgentLogOptions, "agent">> & { agent?: string }): ConsolaReporter {
  const last = new Map<string, { text: string; level: string; repeats: number; since: number }>();
  const emit = (level: string, component: string, message: string, at: Date) => {
    if (o.format === "json") {
      o.write(`${JSON.stringify({ time: at.toISOString(), level: level.toLowerCase(), ...(o.agent ? { agent: o.agent } : {}), ...(component ? { component } : {}), message })}\n`);
      return;
    }
    const word = o.color ? `${COLORS[level] ?? ""}${level.padEnd(5)}\x1b[0m` : level.padEnd(5);
    o.write(`${at.toISOString()} ${word} ${component ? `[${component}] ` : ""}${message}\n`);
  };
  const flushRepeats = (component: string, at: Date) => {
    const prev = last.get(component);
    if (prev && prev.repeats > 0) emit(prev.level, component, `(the last message repeated ${prev.repeats} more time${prev.repeats === 1 ? "" : "s"})`, at);
    if (prev) prev.repeats = 0;
  };
  return {
    log(logObj) {
      const component = logObj.tag ?? "";
      const level = levelOf(logObj);
      const text = messageOf(logObj);
      const at = o.now();
      const prev = last.get(component);
      if (prev && prev.text === text && prev.level === level) {
        prev.repeats++;
        if (at.getTime() - prev.since >= REPEAT_FLUSH_MS) {
          flushRepeats(component, at);
          prev.since = at.getTime();
        }
        return;
      }
      flushRepeats(component, at);
      last.set(component, { text, level, repeats: 0, since: at.getTime() });
      emit(level, component, text, at);
    },
  };
}

/** The agent's logger (consola, with our reporter). */
export function createAgentLogger(options: AgentLogOptions = {}): ConsolaInstance {
  const reporter = lineReporter({
    level: options.level ?? "info",
    format: options.format ?? "text",
    write: options.write ?? ((line) => process.stderr.write(line)),
    color: options.color ?? colorEnabled(process.stderr),
    now: options.now ?? (() => new Date()),
    agent: options.agent,
  });
  return createConsola({ level: CONSOLA_LEVEL[options.level ?? "info"], reporters: [reporter] });
}

/** A component's logger: the agent logger tagged with the component's name. */
export function componentLogger(base: ConsolaInstance, name: string): Logger {
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
