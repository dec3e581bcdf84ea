import { describe, expect, test } from "bun:test";
import { InlineWrites } from "../../../../src/components/channels/file/inline-writes.ts";
import { tempDir } from "../../../support/helpers.ts";
import { drain, openChannel, putAll, range } from "../../../support/file-channel.ts";

/** A policy on a hand-driven clock; each write, inline or pooled, takes the given ms. */
function driven(limitMs: number) {
  let now = 1000;
  const writes = new InlineWrites(limitMs, () => now);
  const ran: string[] = [];
  const write = async (cost: number, fail = false) => {
    await writes.write(
      () => {
        now += cost;
        ran.push("inline");
        if (fail) throw new Error("EIO");
      },
      () => {
        now += cost;
        ran.push("pool");
        return Promise.resolve();
      },
    );
  };
  const many = async (n: number, cost: number) => {
    for (let i = 0; i < n; i++) await write(cost);
  };
  return { writes, ran, write, many };
}

describe("file channel: appends on the main thread while writes are fast", () => {
  test("fast writes and a lone 4 ms one stay inline; a 30 ms stall sends the next ones to the pool until fast pooled writes bring them back", async () => {
    const d = driven(2);
    await d.many(10, 0.3);
    await d.write(4);
    await d.write(0.3);
    expect(d.ran).toEqual(Array(12).fill("inline"));
    await d.write(30);
    await d.many(12, 0.3);
    const after = d.ran.slice(13);
    expect(after[0]).toBe("pool");
    expect(after.filter((r) => r === "pool").length).toBeGreaterThanOrEqual(3);
    expect(after.slice(-3)).toEqual(["inline", "inline", "inline"]);
    expect(d.writes.inline + d.writes.pooled).toBe(25);
  });

  test("writes that keep taking longer than the limit all go to the pool", async () => {
    const d = driven(2);
    await d.many(40, 3);
    expect(d.ran.slice(-20)).toEqual(Array(20).fill("pool"));
  });

  test("a slow inline write that fails throws its error to the committer and is timed like any other", async () => {
    const d = driven(2);
    await expect(d.write(30, true)).rejects.toThrow("EIO");
    await d.write(0.3);
    expect(d.ran).toEqual(["inline", "pool"]);
  });

  test("limit 0: every write goes to the pool", async () => {
    const d = driven(0);
    await d.write(0);
    await d.write(0);
    expect(d.ran).toEqual(["pool", "pool"]);
  });

  for (const limit of [2, 0]) {
    test(`inlineWriteLimit ${limit}: events written ${limit ? "on the main thread" : "by the I/O pool"} come back in order after a restart`, async () => {
      const { dir, cleanup } = tempDir("flume-fc-inline-");
      const opts = { inlineWriteLimit: limit, checkpointOnClose: false };
      const { ch } = await openChannel(dir, opts);
      for (let i = 0; i < 20; i++) await putAll(ch, range(i * 50, 50));
      if (limit) expect(ch.writes.inline).toBeGreaterThan(0);
      else expect(ch.writes.inline).toBe(0);
      // The writes that grow the file (zeros ahead) always go to the pool, so not counted.
      expect(ch.writes.inline + ch.writes.pooled).toBeGreaterThan(15);
      await ch.stop();
      const again = await openChannel(dir, opts);
      expect(await drain(again.ch)).toEqual(range(0, 1000));
      await again.ch.stop();
      cleanup();
    });
  }
});
