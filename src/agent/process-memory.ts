import { readFileSync, readlinkSync } from "node:fs";
import { loadLibc } from "../io/libc.ts";

/**
 * How a release takes the binary's resident code pages off the agent:
 * - "pageout": reclaimed now (MADV_PAGEOUT), out of the page cache too, so they stop counting in
 *   the agent's cgroup; one that runs again is read back from the file. For quiet spells.
 * - "unmap": only taken out of this process's page tables (MADV_DONTNEED); they stay in the
 *   page cache, and one that runs again costs a minor fault. A tenth of the time (3-5 ms
 *   against 32-41 ms for the 25 MB a start leaves), for right after the start, when a load
 *   may be running already.
 */
export type CodePageRelease = "pageout" | "unmap";

/** What a release gave back: resident bytes before and after, and how the binary's code pages went (null: they did not). */
export interface MemoryRelease {
  rssBefore: number;
  rssAfter: number;
  codePages: CodePageRelease | null;
}

/** madvise(2)'s advice to reclaim the pages of a range now (Linux 5.4 and later). */
const MADV_PAGEOUT = 21;
/** madvise(2)'s advice to drop a range's pages from this process (a private file mapping reads them again from the file). */
const MADV_DONTNEED = 4;

type Madvise = (address: number, length: number, advice: number) => number;

interface BunRuntime {
  shrink?(): void;
}

/** Whether this runtime can give memory back (Bun); under Deno and Node a release would do nothing. */
export function canReleaseMemory(): boolean {
  return typeof (globalThis as { Bun?: BunRuntime }).Bun?.shrink === "function";
}

/** libc's madvise through bun:ffi; null where there is none (not Linux with glibc, not Bun): the runtime's own release still runs. */
async function loadMadvise(): Promise<Madvise | null> {
  const libc = await loadLibc();
  return libc && libc.madvise;
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
    const r = readOnlyMappingOf(line, exe);
    if (r) ranges.push(r);
  }
  return ranges;
}

/**
 * The read-only mappings of the executable in /proc/self/smaps that hold no private copy of a
 * page (Anonymous and Swap 0 kB). Only those may be dropped with MADV_DONTNEED: a page the
 * loader wrote (relocations, then made read-only) would come back as the file's original.
 */
export function unwrittenExecutableRanges(smaps: string, exe: string): { start: number; length: number }[] {
  const ranges: { start: number; length: number }[] = [];
  let current: { start: number; length: number } | null = null;
  let written = false;
  const close = () => {
    if (current && !written) ranges.push(current);
    current = null;
  };
  for (const line of smaps.split("\n")) {
    const field = /^(Anonymous|Swap):\s+(\d+) kB$/.exec(line);
    if (field) {
      if (field[2] !== "0") written = true;
      continue;
    }
    if (!/^[0-9a-f]+-[0-9a-f]+ /.test(line)) continue;
    close();
    current = readOnlyMappingOf(line, exe);
    written = false;
  }
  close();
  return ranges;
}

/** Resident bytes of a process by what backs them, from /proc/PID/smaps. */
export interface ResidentParts {
  /** Pages of the executable's file: its code and constants (what a release drops and a load pages back in). */
  binary: number;
  /** Private memory: the JS heap, the allocator, buffers, stacks, written pages of any mapping. */
  anonymous: number;
  /** Pages of other files and shared memory: libraries, mostly. */
  other: number;
}

/**
 * Splits a process's RSS into the executable's file pages, anonymous memory and the rest.
 * Per mapping, Rss minus Anonymous is backed by the file; the Anonymous part of any mapping,
 * the executable's included, is private memory.
 */
export function residentParts(smaps: string, exe: string): ResidentParts {
  const parts: ResidentParts = { binary: 0, anonymous: 0, other: 0 };
  let isExe = false;
  let rss = 0;
  const close = () => {
    if (isExe) parts.binary += rss;
    else parts.other += rss;
    rss = 0;
  };
  for (const line of smaps.split("\n")) {
    const m = /^(Rss|Anonymous):\s+(\d+) kB$/.exec(line);
    if (m) {
      const bytes = Number(m[2]) * 1024;
      if (m[1] === "Rss") rss += bytes;
      else {
        rss -= bytes;
        parts.anonymous += bytes;
      }
      continue;
    }
    const head = /^[0-9a-f]+-[0-9a-f]+ \S{4} \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (!head) continue;
    close();
    isExe = head[1] === exe;
  }
  close();
  return parts;
}

function readOnlyMappingOf(line: string, exe: string): { start: number; length: number } | null {
  const m = /^([0-9a-f]+)-([0-9a-f]+) (\S{4}) \S+ \S+ \S+\s+(.+)$/.exec(line);
  if (!m || m[4] !== exe || m[3][1] === "w") return null;
  const start = Number.parseInt(m[1], 16);
  return { start, length: Number.parseInt(m[2], 16) - start };
}

/**
 * Hands memory the agent no longer uses back to the system. Two parts:
 * - with `collect`, the runtime's own release (Bun.shrink): a full collection, compiled code
 *   thrown away (it is compiled again when it runs again) and the allocator's free pages returned;
 * - the binary's resident code pages, paged out or unmapped (`codePages`). A compiled agent
 *   is one 120 MB executable; the start (parsing, validation, building the agent) and a burst of
 *   events page in 30-45 MB of it that an idle agent does not run. The kernel would drop those
 *   clean pages only under memory pressure, and until then they count in the agent's RSS and in
 *   its cgroup. Pages another process maps too are left to the kernel (it skips them).
 * Linux with Bun only; elsewhere it returns what RSS did without paging anything out.
 */
export async function releaseProcessMemory(o: { collect: boolean; codePages: CodePageRelease } = { collect: true, codePages: "pageout" }): Promise<MemoryRelease> {
  const { codePages } = o;
  const rssBefore = process.memoryUsage.rss();
  // Bun.shrink does its work on the next turn of the event loop, so rssAfter does not show it.
  if (o.collect) (globalThis as { Bun?: BunRuntime }).Bun?.shrink?.();
  let released = false;
  const fn = await loadMadvise();
  if (fn) {
    let ranges: { start: number; length: number }[] = [];
    try {
      const exe = readlinkSync("/proc/self/exe");
      ranges = codePages === "pageout" ? executableReadOnlyRanges(readFileSync("/proc/self/maps", "utf8"), exe) : unwrittenExecutableRanges(readFileSync("/proc/self/smaps", "utf8"), exe);
    } catch {
      // no /proc: nothing to page out
    }
    const advice = codePages === "pageout" ? MADV_PAGEOUT : MADV_DONTNEED;
    for (const r of ranges) if (fn(r.start, r.length, advice) === 0) released = true;
  }
  return { rssBefore, rssAfter: process.memoryUsage.rss(), codePages: released ? codePages : null };
}
