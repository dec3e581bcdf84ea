import { describe, expect } from "bun:test";
import { readdirSync } from "node:fs";
import { tempDir } from "../../../support/helpers.ts";
import { openChannel, putAll, range, takeSome } from "../../../support/file-channel.ts";
import { needsProc } from "../../../support/requires.ts";

/** Open descriptors of this process (Linux). */
const openFds = () => readdirSync("/proc/self/fd").length;

describe("file channel segments", () => {
  needsProc.test("tiny maxFileSize: thousands of segment rolls between checkpoints do not keep a descriptor open per segment (EMFILE)", async () => {
    const { dir, cleanup } = tempDir("flume-fc-segments-");
    // No checkpoint during the test (a slow machine would reach the 30 s default): it would remove the old segments.
    const { ch } = await openChannel(dir, { maxFileSize: 1024, checkpointInterval: 3_600_000 });
    const before = openFds();
    const taken: string[] = [];
    for (let i = 0; i < 1500; i++) {
      await putAll(ch, range(i * 10, 10).map((s) => s.padEnd(100, "x")));
      for (const e of await takeSome(ch, 10)) taken.push(new TextDecoder().decode(e.body).replace(/x+$/, ""));
    }
    // Far more segments than descriptors a process may have on many systems (ulimit -n 1024).
    expect(readdirSync(`${dir}/data`).length).toBeGreaterThan(1500);
    expect(openFds() - before).toBeLessThan(16);
    expect(taken).toEqual(range(0, 15000));
    await ch.stop();
    cleanup();
  }, 90_000);
});
