import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { replayTrace } from "../../src/simulate/replay.ts";
import { tempDir } from "../support/helpers.ts";

const HEADER = JSON.stringify({ flumeTrace: 1, clock: "virtual", deliveries: "sink", channels: [{ name: "c1", type: "memory", durable: false, capacity: 100, transactionCapacity: 10, keepAlive: 3 }], seed: 1 });

async function replayError(lines: object[]): Promise<string> {
  const { dir, cleanup } = tempDir();
  const file = path.join(dir, "t.jsonl");
  writeFileSync(file, [HEADER, ...lines.map((l) => JSON.stringify(l))].join("\n") + "\n");
  try {
    await replayTrace(file);
  } catch (err) {
    return (err as Error).message;
  } finally {
    cleanup();
  }
  return "no error";
}

describe("operations on transactions a crash ended", () => {
  test("a put on a transaction that was open at the crash says it vanished in the crash", async () => {
    const msg = await replayError([
      { t: 0, op: "begin", tx: 1, ch: "c1", by: "r1" },
      { t: 0, op: "put", tx: 1, ids: [1] },
      { t: 1, op: "crash" },
      { t: 2, op: "put", tx: 1, ids: [2] },
    ]);
    expect(msg).toContain(":5: put on transaction 1, which vanished in a crash");
  });

  test("a commit on a transaction closed before the crash says it was closed, not that it vanished", async () => {
    const msg = await replayError([
      { t: 0, op: "begin", tx: 1, ch: "c1", by: "r1" },
      { t: 0, op: "put", tx: 1, ids: [1] },
      { t: 0, op: "commit", tx: 1 },
      { t: 0, op: "committed", tx: 1 },
      { t: 0, op: "close", tx: 1 },
      { t: 1, op: "crash" },
      { t: 2, op: "commit", tx: 1 },
    ]);
    expect(msg).toContain(":8: commit on transaction 1, which was closed before the crash");
    expect(msg).not.toContain("vanished");
  });
});

describe("malformed channel declarations", () => {
  test("a channel line without a name is reported with its own line number", async () => {
    const msg = await replayError([{ op: "channel" }]);
    expect(msg).toContain(":2: a channel needs a name");
  });

  test("a header whose channel list holds something else than objects is a trace error, not a crash", async () => {
    const { dir, cleanup } = tempDir();
    const file = path.join(dir, "t.jsonl");
    writeFileSync(file, `${JSON.stringify({ flumeTrace: 1, channels: [null] })}\n`);
    let msg = "no error";
    try {
      await replayTrace(file);
    } catch (err) {
      msg = `${(err as Error).name}: ${(err as Error).message}`;
    } finally {
      cleanup();
    }
    expect(msg).toContain("TraceError");
    expect(msg).toContain(":1: a channel needs a name");
  });
});
