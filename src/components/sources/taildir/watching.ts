import path from "node:path";
import { DirectoryWatcher, type DirEventKind } from "../../../io/dir-watch.ts";
import type { TaildirScope } from "./scope.ts";
import type { TailFile } from "./tail-file.ts";

/**
 * File-system events of the watched directories: they wake the source and tell the next look
 * which tracked files changed, or that the directories must be listed again (a full look).
 * Polling stays the fallback where events do not come.
 */
export class FileEvents {
  private readonly watchers = new Map<string, DirectoryWatcher>();
  private wake: (() => void) | null = null;
  /** Tracked files named by "change" events since the last look. */
  private readonly dirty = new Set<string>();
  fullScanDue = true;
  eventSeen = false;
  private readonly byPath = new Map<string, TailFile>();
  /** Directories holding files rotated away and still being drained (their events matter too). */
  private readonly drainingDirs = new Set<string>();

  constructor(private readonly scope: TaildirScope) {}

  setWakeup(wake: () => void): void {
    this.wake = wake;
  }

  start(): void {
    const dirs = new Set(this.scope.matchers.map((m) => m.directory));
    for (const dir of dirs) {
      let w = this.watchers.get(dir);
      if (!w) {
        w = new DirectoryWatcher(dir, (kind, name) => this.onDirEvent(dir, kind, name));
        this.watchers.set(dir, w);
      }
      const failedBefore = w.failure;
      if (!w.start() && w.failure !== failedBefore) {
        this.scope.logger.warn(`${this.scope.name}: no file-system events for ${dir} (${w.failure}); polling it (up to every ${this.scope.options.maxBackoffSleep} ms)`);
      }
    }
  }

  close(): void {
    for (const w of this.watchers.values()) w.close();
    this.watchers.clear();
  }

  /** Every directory sends events. */
  get watching(): boolean {
    for (const w of this.watchers.values()) if (!w.active) return false;
    return this.watchers.size > 0;
  }

  private onDirEvent(dir: string, kind: DirEventKind, name: string | null): void {
    if (!this.scope.started) return;
    const positionFile = this.scope.options.positionFile;
    const posDir = path.dirname(positionFile);
    const posBase = path.basename(positionFile);
    if (name !== null && dir === posDir && name.startsWith(posBase)) return; // our own writes
    const matchers = this.scope.matchers.filter((m) => m.directory === dir);
    const relevant = name === null || matchers.some((m) => m.matchesName(name));
    if (!relevant && !this.drainingDirs.has(dir)) return;
    if (name !== null && kind === "change" && relevant) {
      const p = path.join(dir, name);
      if (this.trackedAt(p)) this.dirty.add(p);
      else this.fullScanDue = true;
    } else {
      this.fullScanDue = true;
      if (kind === "rename") for (const m of matchers) m.invalidate();
    }
    this.eventSeen = true;
    this.wake?.();
  }

  /** The paths named by "change" events since the last call. */
  takeDirty(): string[] {
    const dirty = [...this.dirty];
    this.dirty.clear();
    return dirty;
  }

  /** The matched tracked file at a path (from an index rebuilt after each look; checked on use). */
  trackedAt(p: string): TailFile | undefined {
    const f = this.byPath.get(p);
    return f && f.path === p && f.matched && this.scope.files.get(f.inode) === f ? f : undefined;
  }

  indexPaths(): void {
    this.byPath.clear();
    this.drainingDirs.clear();
    for (const f of this.scope.files.values()) {
      if (f.matched) this.byPath.set(f.path, f);
      else this.drainingDirs.add(path.dirname(f.path));
    }
  }
}
