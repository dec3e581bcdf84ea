/**
 * The reload policy of a running agent: when the configuration file changed (or on demand),
 * load it again and apply it with Agent.reload, keeping the running configuration when the new
 * one is invalid or cannot be built. `flume run` polls it; SIGHUP asks for it at once.
 */
import { ConfigReadError, readConfigFile } from "../config/load.ts";
import { formatProblem } from "../config/problems.ts";
import type { LoadResult } from "../config/validate.ts";
import type { Agent } from "./agent.ts";

export interface ReloadLog {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
  success(message: string): void;
}

export interface ReloaderOptions {
  /** The configuration file, as the user named it (for messages) and resolved. */
  file: string;
  displayName: string;
  /** Parses and checks the text of the file. */
  load(text: string): LoadResult | Promise<LoadResult>;
  /** Start without broken components instead of keeping the old configuration (--lenient). */
  lenient: boolean;
  /** Warnings count as errors (--strict): a file with one keeps the running configuration. */
  strict?: boolean;
  log: ReloadLog;
  /** The text the agent was started from. */
  loadedText: string;
}

export class ConfigReloader {
  /** The text last handled; compared on every poll (two saves within one mtime tick look unchanged to an mtime check). */
  private lastText: string;
  /**
   * Why building lastText failed (a file it names missing, a resource busy): such a failure may
   * pass without the file changing, so it is tried again on each poll, logged once.
   */
  private buildFailure: string | null = null;
  /** The last error reading the file, logged once until it changes. */
  private readFailure: string | null = null;
  private running: Promise<void> | null = null;

  constructor(
    private readonly agent: Pick<Agent, "reload">,
    private readonly o: ReloaderOptions,
  ) {
    this.lastText = o.loadedText;
  }

  /** Reloads when the file's content changed (or the last build failed); one at a time. */
  poll(): Promise<void> {
    return this.once(false);
  }

  /** Reloads now, even when the file looks unchanged (SIGHUP). */
  reloadNow(): Promise<void> {
    return this.once(true);
  }

  private once(force: boolean): Promise<void> {
    if (this.running) return this.running;
    this.running = this.check(force).finally(() => (this.running = null));
    return this.running;
  }

  private async check(force: boolean): Promise<void> {
    const { log } = this.o;
    let text: string;
    try {
      text = readConfigFile(this.o.file);
    } catch (err) {
      const message = `cannot read ${this.o.displayName}: ${err instanceof ConfigReadError ? err.reason : (err as Error).message}; keeping the running configuration`;
      if (message !== this.readFailure || force) log.error(message);
      this.readFailure = message;
      return;
    }
    this.readFailure = null;
    if (text === this.lastText && this.buildFailure === null && !force) return;
    const retry = text === this.lastText && !force;
    this.lastText = text;
    if (!retry) this.buildFailure = null;
    try {
      const next = await this.o.load(text);
      const bad = next.problems.filter((p) => p.severity === "error" || this.o.strict === true);
      const invalid = !next.model || (bad.length > 0 && !this.o.lenient);
      // Warnings too (an unknown property's "did you mean"), as at startup; once per change.
      if (!retry || invalid) for (const p of next.problems) (p.severity === "error" ? log.error : log.warn)(formatProblem(p));
      if (!next.model || invalid) {
        this.buildFailure = null;
        log.error(`${this.o.displayName} changed but has ${bad.length} error(s)${this.o.strict ? " (warnings count under --strict)" : ""}; keeping the running configuration`);
        return;
      }
      // --lenient applies to reloads too, as at startup: the broken components are dropped.
      if (!retry) for (const w of next.model.dropped) log.warn(w);
      let r;
      try {
        r = await this.agent.reload(next.model);
      } catch (err) {
        const message = (err as Error).message;
        if (message !== this.buildFailure) log.error(`reload of ${this.o.displayName} failed: ${message}; keeping the running configuration, trying again on each poll`);
        this.buildFailure = message;
        return;
      }
      this.buildFailure = null;
      log.success(`reloaded ${this.o.displayName}: started [${r.started.join(", ")}], stopped [${r.stopped.join(", ")}], kept [${r.kept.join(", ")}]`);
    } catch (err) {
      log.error(`reload of ${this.o.displayName} failed: ${(err as Error).message}; keeping the running configuration`);
    }
  }
}
