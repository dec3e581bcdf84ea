import { describe, expect, test } from "bun:test";
import { executableReadOnlyRanges } from "../../src/agent/process-memory.ts";

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
