import { describe, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import path from "node:path";
import { ChannelException, ChannelFullException } from "../../../../src/core/errors.ts";
import { bodyEvent, createEvent, type Event } from "../../../../src/core/event.ts";
import { FileChannel } from "../../../../src/components/channels/file/index.ts";
import { VirtualClock } from "../../../../src/core/virtual-clock.ts";
import { drain, openChannel, options, putAll, range, takeSome, tempDirsAfterEach } from "../../../support/file-channel.ts";
import { waitUntil } from "../../../support/helpers.ts";

const temp = tempDirsAfterEach();
const text = (b: Uint8Array) => new TextDecoder().decode(b);

describe("file channel transactions", () => {
  test("events without headers (as line sources make them) and with headers read back from disk as they were put; the empty headers can be written", async () => {
    const dir = temp();
    const first = await openChannel(dir);
    const put = first.ch.getTransaction();
    put.begin();
    put.put(bodyEvent(new TextEncoder().encode("plain line")));
    put.put(createEvent("tagged", { host: "h1", "ü": "✓" }));
    await put.commit();
    put.close();
    await first.ch.stop();
    const { ch } = await openChannel(dir); // a restart: the events are decoded from the data file
    const [plain, tagged] = await takeSome(ch, 10);
    expect(text(plain.body)).toBe("plain line");
    expect(plain.headers).toEqual({});
    plain.headers.k = "v";
    expect(plain.headers).toEqual({ k: "v" });
    expect(text(tagged.body)).toBe("tagged");
    expect(tagged.headers).toEqual({ host: "h1", "ü": "✓" });
    await ch.stop();
  });

  test("bodies of every size around the short-copy limits, and every byte value, read back from disk byte for byte", async () => {
    const dir = temp();
    const sizes = [0, 1, 63, 64, 65, 127, 128, 129, 5000];
    const bodies = sizes.map((n, k) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + k) & 0xff));
    const first = await openChannel(dir);
    const put = first.ch.getTransaction();
    put.begin();
    put.putAll(bodies.map((b) => bodyEvent(b)));
    await put.commit();
    put.close();
    await first.ch.stop();
    const { ch } = await openChannel(dir); // decoded from the data file, not kept from the put
    const tx = ch.getTransaction();
    tx.begin();
    const out: Event[] = [];
    expect(tx.takeInto(out, 100)).toBe(sizes.length);
    await tx.commit();
    tx.close();
    expect(out.map((e) => [...e.body])).toEqual(bodies.map((b) => [...b]));
    await ch.stop();
  });

  test("rollback of a put leaves nothing; rollback of a take puts the events back at the head", async () => {
    const { ch } = await openChannel(temp());
    const put = ch.getTransaction();
    put.begin();
    put.put(createEvent("lost"));
    await put.rollback();
    put.close();
    expect(ch.size).toBe(0);

    await putAll(ch, range(0, 10));
    const take = ch.getTransaction();
    take.begin();
    expect(text(take.take()!.body)).toBe("e0");
    expect(text(take.take()!.body)).toBe("e1");
    await take.rollback();
    take.close();
    expect(ch.size).toBe(10);
    expect(await drain(ch)).toEqual(range(0, 10));
    const snap = ch.counter.snapshot();
    expect(snap.EventPutSuccessCount).toBe("10");
    expect(snap.EventTakeSuccessCount).toBe("10");
    await ch.stop();
  });

  test("put beyond transactionCapacity throws ChannelException; a full channel fails the commit with ChannelFullException", async () => {
    const { ch } = await openChannel(temp(), { capacity: 15, transactionCapacity: 10, keepAlive: 0 });
    const tx = ch.getTransaction();
    tx.begin();
    for (let i = 0; i < 10; i++) tx.put(createEvent(`x${i}`));
    expect(() => tx.put(createEvent("one too many"))).toThrow(ChannelException);
    await tx.commit();
    tx.close();

    const tx2 = ch.getTransaction();
    tx2.begin();
    for (let i = 0; i < 6; i++) tx2.put(createEvent(`y${i}`));
    const err = await tx2.commit().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ChannelFullException);
    expect((err as Error).message).toContain("Space for commit to queue couldn't be acquired");
    await tx2.rollback();
    tx2.close();
    expect(ch.size).toBe(10);
    await ch.stop();
  });

  test("a commit waiting for room goes through once a take commits within keep-alive", async () => {
    const { ch } = await openChannel(temp(), { capacity: 10, transactionCapacity: 10, keepAlive: 3 });
    await putAll(ch, range(0, 10));
    const waiting = putAll(ch, ["late"]);
    await takeSome(ch, 1);
    await waiting;
    expect(await drain(ch, 10)).toEqual([...range(1, 9), "late"]);
    await ch.stop();
  });

  test("many interleaved transactions: every committed put is taken exactly once", async () => {
    const dir = temp();
    const { ch } = await openChannel(dir, { maxFileSize: 64 * 1024 });
    const producers = Array.from({ length: 8 }, async (_, p) => {
      for (let b = 0; b < 20; b++) await putAll(ch, range(b * 25, 25, `p${p}-`));
    });
    const taken: string[] = [];
    let done = false;
    const consumers = Array.from({ length: 4 }, async (_, c) => {
      for (let round = 0; !done || ch.size > 0; round++) {
        const tx = ch.getTransaction();
        tx.begin();
        const got: string[] = [];
        for (let i = 0; i < 30; i++) {
          const e = tx.take();
          if (!e) break;
          got.push(text(e.body));
        }
        // Every third batch of consumer 0 fails and is rolled back: its events must come again.
        if (c === 0 && round % 3 === 0) await tx.rollback();
        else {
          await tx.commit();
          taken.push(...got);
        }
        tx.close();
        await new Promise((r) => setTimeout(r, 0));
      }
    });
    await Promise.all(producers);
    done = true;
    await Promise.all(consumers);
    expect(taken.length).toBe(8 * 20 * 25);
    expect(new Set(taken).size).toBe(taken.length);
    // Segments roll at 64 KB and are deleted by the closing checkpoint once drained.
    await ch.stop();
    expect(readdirSync(path.join(dir, "data")).filter((f) => f.startsWith("log-")).length).toBe(1);
  });

  test("source positions are committed with the puts and survive a restart", async () => {
    const dir = temp();
    const a = await openChannel(dir, { checkpointOnClose: false });
    expect(a.ch.sourcePosition("r1")).toBeUndefined();
    await putAll(a.ch, range(0, 3), {}, ["r1", '{"inode":7,"pos":30}']);
    await putAll(a.ch, range(3, 3), {}, ["r1", '{"inode":7,"pos":60}']);
    const tx = a.ch.getTransaction();
    tx.begin();
    tx.put(createEvent("rolled back"));
    tx.setSourcePosition("r1", '{"inode":7,"pos":99}');
    await tx.rollback();
    tx.close();
    expect(a.ch.sourcePosition("r1")).toBe('{"inode":7,"pos":60}');
    await a.ch.stop();

    const b = await openChannel(dir);
    expect(b.ch.sourcePosition("r1")).toBe('{"inode":7,"pos":60}');
    await b.ch.stop();
    // And from the checkpoint written at that stop.
    const c = await openChannel(dir);
    expect(c.ch.sourcePosition("r1")).toBe('{"inode":7,"pos":60}');
    expect(await drain(c.ch)).toEqual(range(0, 6));
    await c.ch.stop();
  });

  test("counters have Flume's file channel keys", async () => {
    const { ch } = await openChannel(temp());
    await putAll(ch, range(0, 5));
    await takeSome(ch, 10);
    const snap = ch.counter.snapshot();
    expect(Object.keys(snap).sort()).toEqual(
      [
        "ChannelCapacity",
        "ChannelFillPercentage",
        "ChannelSize",
        "CheckpointBackupWriteErrorCount",
        "CheckpointWriteErrorCount",
        "Closed",
        "EventPutAttemptCount",
        "EventPutErrorCount",
        "EventPutSuccessCount",
        "EventTakeAttemptCount",
        "EventTakeErrorCount",
        "EventTakeSuccessCount",
        "Open",
        "StartTime",
        "StopTime",
        "Type",
        "Unhealthy",
      ].sort(),
    );
    expect(snap).toMatchObject({ Open: "true", Closed: "0", Unhealthy: "0", EventTakeAttemptCount: "6", EventTakeSuccessCount: "5", ChannelCapacity: "100000", Type: "CHANNEL" });
    await ch.stop();
    expect(ch.counter.snapshot().Open).toBe("false");
  });

  test("events spread over several dataDirs and a restart without checkpoint replays them all", async () => {
    const dir = temp();
    const dataDirs = [path.join(dir, "d1"), path.join(dir, "d2")];
    const a = await openChannel(dir, { dataDirs, maxFileSize: 4096, checkpointOnClose: false });
    for (let i = 0; i < 20; i++) await putAll(a.ch, range(i * 20, 20));
    await a.ch.stop();
    expect(readdirSync(dataDirs[0]).some((f) => f.startsWith("log-"))).toBe(true);
    expect(readdirSync(dataDirs[1]).some((f) => f.startsWith("log-"))).toBe(true);
    const b = await openChannel(dir, { dataDirs, maxFileSize: 4096 });
    expect(await drain(b.ch)).toEqual(range(0, 400));
    await b.ch.stop();
  });

  test("concurrent commits share one write and one fsync (group commit)", async () => {
    const { ch } = await openChannel(temp());
    await Promise.all(Array.from({ length: 10 }, (_, i) => putAll(ch, range(i * 10, 10, `g${i}-`))));
    expect(ch.size).toBe(100);
    expect(ch.writeStats.transactions).toBe(10);
    expect(ch.writeStats.groups).toBeLessThan(10);
    await ch.stop();
  });

  test("a producer and a consumer share each group without waiting for a turn of a busy event loop", async () => {
    // Writes on the main thread (a generous limit), so only the writer's own wait is counted.
    const { ch } = await openChannel(temp(), { inlineWriteLimit: 1000 });
    await putAll(ch, range(0, 10));
    // Twenty callbacks that keep re-queueing themselves: each turn of the loop runs them all.
    let turns = 0;
    let busy = true;
    const spin = (k: number) => {
      if (!busy) return;
      if (k === 0) turns++;
      setImmediate(() => spin(k));
    };
    for (let k = 0; k < 20; k++) spin(k);
    const rounds = 50;
    let taken = 0;
    const groupsBefore = ch.writeStats.groups;
    await Promise.all([
      (async () => {
        for (let i = 1; i <= rounds; i++) await putAll(ch, range(i * 10, 10));
      })(),
      (async () => {
        for (let i = 0; i < rounds; i++) taken += (await takeSome(ch, 10)).length;
      })(),
    ]);
    busy = false;
    expect(taken).toBe(rounds * 10);
    // One fsync for each put and take pair, not one each.
    expect(ch.writeStats.groups - groupsBefore).toBeLessThanOrEqual(rounds + 2);
    // Waiting a turn after every group would take at least one turn per round.
    expect(turns).toBeLessThan(rounds / 5);
    await ch.stop();
  });

  test("with fsyncPerTransaction false commits still reach the log and survive a restart", async () => {
    const dir = temp();
    const a = await openChannel(dir, { fsyncPerTransaction: false, fsyncInterval: 1, checkpointOnClose: false });
    await putAll(a.ch, range(0, 100));
    await takeSome(a.ch, 30);
    await a.ch.stop();
    const b = await openChannel(dir);
    expect(await drain(b.ch)).toEqual(range(30, 70));
    await b.ch.stop();
  });

  test("an event the format cannot hold fails its commit with ChannelException; the channel goes on", async () => {
    const { ch } = await openChannel(temp());
    const err = await putAll(ch, ["x"], { ["k".repeat(70000)]: "v" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ChannelException);
    expect((err as Error).message).toContain("header name is 70000 bytes");
    await putAll(ch, ["fine"]);
    expect(await drain(ch)).toEqual(["fine"]);
    await ch.stop();
  });

  test("the periodic checkpoint deletes drained segments while the channel runs", async () => {
    const dir = temp();
    const clock = new VirtualClock(1_000_000);
    const ch = new FileChannel("c1", options(dir, { maxFileSize: 4096, checkpointInterval: 5000 }), { clock });
    await ch.start();
    const files = () => readdirSync(path.join(dir, "data")).filter((f) => f.startsWith("log-"));
    for (let i = 0; i < 20; i++) await putAll(ch, range(i * 50, 50));
    expect(files().length).toBeGreaterThan(3);
    expect((await drain(ch)).length).toBe(1000);
    await clock.advance(5000);
    // Let the writer finish the checkpoint it started (real file I/O).
    await waitUntil(() => files().length === 1, "one data file left", 1000, 5);
    await ch.stop();
  });
});
