import { readFileSync, readlinkSync } from "node:fs";

/** What a release gave back: resident bytes before and after, and whether the binary's code pages were paged out. */
export interface MemoryRelease {
  rssBefore: number;
  rssAfter: number;
  codePagedOut: boolean;
}

/** madvise(2)'s advice to reclaim the pages of a range now (Linux 5.4 and later). */
const MADV_PAGEOUT = 21;

type Madvise = (address: number, length: number, advice: number) => number;

interface BunRuntime {
  shrink?(): void;
}

let madvise: Madvise | null | undefined;

/** Whether this runtime can give memory back (Bun); under Deno and Node a release would do nothing. */
export function canReleaseMemory(): boolean {
  return typeof (globalThis as { Bun?: BunRuntime }).Bun?.shrink === "function";
}

/** libc's madvise through bun:ffi; null where there is none (not Linux with glibc, not Bun). */
async function loadMadvise(): Promise<Madvise | null> {
  if (madvise !== undefined) return madvise;
  madvise = null;
  if (process.platform !== "linux" || typeof Bun === "undefined") return null;
  try {
    const ffi = await import("bun:ffi");
    const libc = ffi.dlopen("libc.so.6", { madvise: { args: [ffi.FFIType.u64, ffi.FFIType.u64, ffi.FFIType.i32], returns: ffi.FFIType.i32 } });
    madvise = (address, length, advice) => libc.symbols.madvise(address, length, advice) as number;
  } catch {
    // musl or no FFI: the runtime's own release still runs.
  }
  return madvise;
}

/**
 * The read-only mappings of this process's executable (code and constants), from
 * /proc/self/maps: clean copies of the file, so paging them out loses nothing; a page that is
 * needed again is read back from the binary. Writable mappings are left alone: their changed
 * pages could only go to swap.
 */
export function executableReadOnlyRanges(maps: string, exe: string): { start: number; length: number }[] {
  const ranges: { start: number; length: number }[] = [];
  for (const line of maps.split("\n")) {
    const m = /^([0-9a-f]+)-([0-9a-f]+) (\S{4}) \S+ \S+ \S+\s+(.+)$/.exec(line);
    if (!m || m[4] !== exe || m[3][1] === "w") continue;
    const start = Number.parseInt(m[1], 16);
    ranges.push({ start, length: Number.parseInt(m[2], 16) - start });
  }
  return ranges;
}

/**
 * Hands memory the agent no longer uses back to the system. Two parts:
 * - the runtime's own release (Bun.shrink): a full collection, compiled code thrown away (it is
 *   compiled again when it runs again) and the allocator's free pages returned;
 * - the binary's resident code pages, paged out with madvise(MADV_PAGEOUT). A compiled agent
 *   is one 120 MB executable; the start (parsing, validation, building the agent) and a burst of
 *   events page in 30-45 MB of it that an idle agent does not run. The kernel would drop those
 *   clean pages only under memory pressure, and until then they count in the agent's RSS and in
 *   its cgroup. Pages another process maps too are left to the kernel (it skips them).
 * Linux with Bun only; elsewhere it returns what RSS did without paging anything out.
 */
export async function releaseProcessMemory(): Promise<MemoryRelease> {
  const rssBefore = process.memoryUsage.rss();
  (globalThis as { Bun?: BunRuntime }).Bun?.shrink?.();
  let codePagedOut = false;
  const fn = await loadMadvise();
  if (fn) {
    let ranges: { start: number; length: number }[] = [];
    try {
      ranges = executableReadOnlyRanges(readFileSync("/proc/self/maps", "utf8"), readlinkSync("/proc/self/exe"));
    } catch {
      // no /proc: nothing to page out
    }
    for (const r of ranges) if (fn(r.start, r.length, MADV_PAGEOUT) === 0) codePagedOut = true;
  }
  return { rssBefore, rssAfter: process.memoryUsage.rss(), codePagedOut };
}
