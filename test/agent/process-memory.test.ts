import { describe, expect, test } from "bun:test";
import { readFileSync, readlinkSync } from "node:fs";
import { executableReadOnlyRanges, residentParts, unwrittenExecutableRanges } from "../../src/agent/process-memory.ts";
import { needsProc } from "../support/requires.ts";

const MAPS = `00200000-01a39000 r--p 00000000 fe:01 2189273                            /opt/flume/bin/flume
01a40000-0684a000 r-xp 01838000 fe:01 2189273                            /opt/flume/bin/flume
06867000-07483000 rw-p 0665e000 fe:01 2189273                            /opt/flume/bin/flume
07483000-07500000 rw-p 00000000 00:00 0
5ad49400000-5ad89400000 ---p 00000000 00:00 0
7f763fe59000-7f763ffaf000 r-xp 00026000 fe:01 1048601                    /usr/lib/x86_64-linux-gnu/libc.so.6
7f7640000000-7f7640010000 r--p 00000000 fe:01 2189999                    /opt/flume/bin/flume-old (deleted)
`;

describe("the binary's pages a release pages out", () => {
  test("only the read-only mappings of the executable itself: not its writable data, not libraries, not anonymous memory", () => {
    expect(executableReadOnlyRanges(MAPS, "/opt/flume/bin/flume")).toEqual([
      { start: 0x200000, length: 0x1a39000 - 0x200000 },
      { start: 0x1a40000, length: 0x684a000 - 0x1a40000 },
    ]);
  });

  test("a path with spaces is matched whole", () => {
    const maps = "00400000-00500000 r-xp 00000000 fe:01 12 /opt/my agent/flume\n00500000-00600000 r-xp 00000000 fe:01 13 /opt/my agent/flume2\n";
    expect(executableReadOnlyRanges(maps, "/opt/my agent/flume")).toEqual([{ start: 0x400000, length: 0x100000 }]);
  });
});

/** An smaps entry: the maps line, then the fields a release reads among others it does not. */
function entry(line: string, anonymousKb: number, swapKb = 0): string {
  return `${line}\nSize:               1024 kB\nRss:                 512 kB\nPrivate_Clean:       512 kB\nAnonymous:      ${String(anonymousKb).padStart(8)} kB\nSwap:           ${String(swapKb).padStart(8)} kB\nVmFlags: rd ex mr mw me\n`;
}

describe("the binary's pages a release at the start drops from the process (MADV_DONTNEED)", () => {
  const exe = "/opt/flume/bin/flume";
  const smaps = [
    entry(`00200000-01a39000 r--p 00000000 fe:01 2189273 ${exe}`, 0),
    entry(`01a40000-0684a000 r-xp 01838000 fe:01 2189273 ${exe}`, 0),
    entry(`0684a000-0685f000 rw-p 06641000 fe:01 2189273 ${exe}`, 84),
    // Relocated by the loader, then made read-only: its pages are private copies.
    entry(`0685f000-06867000 r--p 06656000 fe:01 2189273 ${exe}`, 12),
    // A written page that went to swap is a private copy too.
    entry(`06900000-06910000 r--p 06700000 fe:01 2189273 ${exe}`, 0, 4),
    entry("7f763fe59000-7f763ffaf000 r-xp 00026000 fe:01 1048601 /usr/lib/x86_64-linux-gnu/libc.so.6", 0),
  ].join("");

  test("only read-only mappings of the executable with no private copy of a page", () => {
    expect(unwrittenExecutableRanges(smaps, exe)).toEqual([
      { start: 0x200000, length: 0x1a39000 - 0x200000 },
      { start: 0x1a40000, length: 0x684a000 - 0x1a40000 },
    ]);
  });

  needsProc.test("in this process: the runtime's code is dropped, the pages its loader relocated are not", () => {
    const self = readlinkSync("/proc/self/exe");
    const maps = readFileSync("/proc/self/maps", "utf8");
    const ranges = unwrittenExecutableRanges(readFileSync("/proc/self/smaps", "utf8"), self);
    const code = maps.split("\n").filter((l) => l.endsWith(self) && / r-xp /.test(l));
    expect(code.length).toBeGreaterThan(0);
    for (const line of code) expect(ranges.map((r) => r.start)).toContain(Number.parseInt(line.split("-")[0], 16));
    // Bun's binary has a RELRO segment: read-only, and written by the loader before that.
    const readOnly = executableReadOnlyRanges(maps, self);
    expect(ranges.length).toBeLessThan(readOnly.length);
    for (const r of ranges) expect(readOnly).toContainEqual(r);
  });
});

describe("where a process's resident memory is (the benchmarks' breakdown of a peak)", () => {
  const exe = "/opt/flume/bin/flume";
  const kb = 1024;

  test("the executable's file pages, private memory of any mapping, and other files apart", () => {
    const smaps = [
      entry(`00200000-01a39000 r--p 00000000 fe:01 2189273 ${exe}`, 0),
      // Written data of the binary: the written part is private, the rest is the file's.
      entry(`06867000-07483000 rw-p 0665e000 fe:01 2189273 ${exe}`, 84),
      entry("07483000-07500000 rw-p 00000000 00:00 0", 512),
      entry("7ffd1000-7ffd2000 rw-p 00000000 00:00 0                          [stack]", 512),
      entry("7f763fe59000-7f763ffaf000 r-xp 00026000 fe:01 1048601 /usr/lib/x86_64-linux-gnu/libc.so.6", 0),
      // Another binary of the same name prefix is not this one.
      entry(`7f7640000000-7f7640010000 r--p 00000000 fe:01 2189999 ${exe}-old`, 0),
    ].join("");
    expect(residentParts(smaps, exe)).toEqual({ binary: (512 + 512 - 84) * kb, anonymous: (84 + 512 + 512) * kb, other: 2 * 512 * kb });
  });

  needsProc.test("in this process the parts add up to its resident set", () => {
    const parts = residentParts(readFileSync("/proc/self/smaps", "utf8"), readlinkSync("/proc/self/exe"));
    const rss = Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync("/proc/self/status", "utf8"))?.[1]) * kb;
    expect(parts.binary).toBeGreaterThan(1024 * kb);
    expect(parts.anonymous).toBeGreaterThan(1024 * kb);
    // Read at two moments a few ms apart: within 4 MB.
    expect(Math.abs(parts.binary + parts.anonymous + parts.other - rss)).toBeLessThan(4096 * kb);
  });
});
