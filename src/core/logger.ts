/** The logging the core needs; the agent passes its line logger (src/agent/logging.ts). */
export interface Logger {
  debug(message: string, ...args: unknown[]): void;
  info(message: string, ...args: unknown[]): void;
  warn(message: string, ...args: unknown[]): void;
  error(message: string, ...args: unknown[]): void;
  /**
   * A component's data written to the log at INFO (the logger sink's events): written every
   * time, never folded with repeats as messages are. Loggers without it take info.
   */
  output?(message: string): void;
}

/** Drops everything; the default where no logger was given (tests, the simulator). */
export const silentLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
};

/** Keeps messages in memory, for tests and the simulator's report. */
export class MemoryLogger implements Logger {
  readonly lines: { level: "debug" | "info" | "warn" | "error"; message: string }[] = [];
  debug(message: string): void {
    this.lines.push({ level: "debug", message });
  }
  info(message: string): void {
    this.lines.push({ level: "info", message });
  }
  warn(message: string): void {
    this.lines.push({ level: "warn", message });
  }
  error(message: string): void {
    this.lines.push({ level: "error", message });
  }
}
