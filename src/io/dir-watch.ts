/**
 * File-system events for one directory (inotify on Linux, through fs.watch; works under Bun
 * and Deno), so a file source can wake up when a file in it is written, created, renamed or
 * removed instead of waiting for its next poll. Events are hints: some file systems (NFS,
 * FUSE, some container mounts) deliver none, a watch may fail or die, and a burst may be
 * folded into fewer events. Sources keep polling as the fallback; the watcher only makes the
 * poll come sooner.
 */
import { type FSWatcher, watch } from "node:fs";

/** "rename": a name appeared, went or moved; "change": a file's content or metadata changed. */
export type DirEventKind = "rename" | "change";

export class DirectoryWatcher {
  private watcher: FSWatcher | null = null;
  /** Why the last watch could not start or ended, for one log line. */
  failure: string | null = null;

  constructor(
    readonly dir: string,
    private readonly onEvent: (kind: DirEventKind, name: string | null) => void,
  ) {}

  get active(): boolean {
    return this.watcher !== null;
  }

  /** Starts watching (again, after a failure); false when the directory gives no events. */
  start(): boolean {
    if (this.watcher) return true;
    try {
      // Not persistent: a watch alone does not keep the process alive.
      const w = watch(this.dir, { persistent: false }, (kind, name) => this.onEvent(kind === "rename" ? "rename" : "change", name === null || name === undefined ? null : String(name)));
      w.on("error", (err: Error) => {
        this.failure = err.message;
        this.close();
        // What happened meanwhile is unknown: the owner looks at everything once.
        this.onEvent("rename", null);
      });
      this.watcher = w;
      this.failure = null;
      return true;
    } catch (err) {
      this.failure = (err as Error).message;
      return false;
    }
  }

  close(): void {
    const w = this.watcher;
    this.watcher = null;
    try {
      w?.close();
    } catch {
      // already closed
    }
  }
}
