import { describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { definition, RollingFileSink } from "../../../src/components/sinks/file-roll.ts";
import * as registry from "../../../src/components/registry.ts";
import { lookupComponent } from "../../../src/components/registry.ts";
import { validateConfigText } from "../../../src/config/validate.ts";
import { javaMapString } from "../../../src/components/serializers/header-and-text.ts";
import { bodyEvent, createEvent } from "../../../src/core/event.ts";
import { MemoryChannel } from "../../../src/core/memory-channel.ts";
import { VirtualClock } from "../../../src/core/virtual-clock.ts";
import { cleanupsAfterEach, tempDir } from "../../support/helpers.ts";
import { build, context } from "../../support/components.ts";
import { needsPythonAvro, needsTmpfs } from "../../support/requires.ts";

const cleanups = cleanupsAfterEach();

function setup(props: Record<string, string> = {}, clock?: VirtualClock) {
  const t = tempDir("flume-fileroll-");
  cleanups.push(t.cleanup);
  const ctx = context("k1");
  if (clock) ctx.clock = clock;
  const sink = build(definition, { "sink.directory": t.dir, ...props }, ctx) as RollingFileSink;
  const channel = new MemoryChannel("c1", { capacity: 10000, transactionCapacity: 1000 });
  channel.start();
  sink.setChannel(channel);
  return { dir: t.dir, sink, channel, ctx };
}

async function put(channel: MemoryChannel, events: { body: string; headers?: Record<string, string> }[]): Promise<void> {
  const tx = channel.getTransaction();
  tx.begin();
  // Without headers: an event as line sources make it (headers made only when read).
  for (const e of events) tx.put(e.headers ? createEvent(e.body, e.headers) : bodyEvent(new TextEncoder().encode(e.body)));
  await tx.commit();
  tx.close();
}

const counterOf = (name: string) => Number(/-(\d+)(?:\.[^.-]*)?$/.exec(name)?.[1]);
const files = (dir: string) => readdirSync(dir).sort((a, b) => counterOf(a) - counterOf(b));

/** Python's avro package from Debian (python3-avro), the second Avro implementation; not the pyenv python3 on PATH. */
const PYTHON = "/usr/bin/python3";

describe("file_roll sink", () => {
  test("each batch is in the file before the take commits; files are named <timestamp>-<n>", async () => {
    const { dir, sink, channel } = setup({ "sink.batchSize": "3", "sink.rollInterval": "0" });
    await sink.start();
    await put(channel, [{ body: "a" }, { body: "b" }, { body: "c" }, { body: "d" }]);
    // Watch the commit: the file must already hold the batch when the channel commits.
    const seenAtCommit: string[] = [];
    const orig = channel.getTransaction.bind(channel);
    channel.getTransaction = () => {
      const tx = orig();
      const commit = tx.commit.bind(tx);
      tx.commit = async () => {
        seenAtCommit.push(readFileSync(path.join(dir, readdirSync(dir)[0]), "utf8"));
        return commit();
      };
      return tx;
    };
    expect(await sink.process()).toBe("READY");
    expect(await sink.process()).toBe("BACKOFF");
    expect(seenAtCommit).toEqual(["a\nb\nc\n", "a\nb\nc\nd\n"]);
    expect(readdirSync(dir)).toHaveLength(1);
    expect(readdirSync(dir)[0]).toMatch(/^\d{13}-1$/);
    expect(channel.size).toBe(0);
    expect(sink.counter.get("EventDrainSuccessCount")).toBe(4);
    await sink.stop();
  });

  test("counts drained events and no batches, as Flume 1.11's RollingFileSink (its Batch counters stay 0)", async () => {
    const { sink, channel } = setup({ "sink.batchSize": "2", "sink.rollInterval": "0" });
    await sink.start();
    await put(channel, [{ body: "a" }, { body: "b" }, { body: "c" }]);
    expect(await sink.process()).toBe("READY");
    expect(await sink.process()).toBe("BACKOFF");
    expect(await sink.process()).toBe("BACKOFF");
    expect(sink.counter.values).toMatchObject({ EventDrainAttemptCount: 3, EventDrainSuccessCount: 3, BatchCompleteCount: 0, BatchUnderflowCount: 0, BatchEmptyCount: 0 });
    await sink.stop();
  });

  test("rolls to a new file every rollInterval seconds, with prefix and extension", async () => {
    const clock = new VirtualClock(1_700_000_000_000);
    const { dir, sink, channel } = setup({ "sink.rollInterval": "30", "sink.pathManager.prefix": "web-", "sink.pathManager.extension": "log" }, clock);
    await sink.start();
    await put(channel, [{ body: "one" }]);
    await sink.process();
    await clock.advance(30_000);
    await put(channel, [{ body: "two" }]);
    await sink.process();
    await clock.advance(30_000);
    await put(channel, [{ body: "three" }]);
    await sink.process();
    await sink.stop();
    const names = files(dir);
    expect(names).toEqual(["web-1700000000000-1.log", "web-1700000000000-2.log", "web-1700000000000-3.log"]);
    expect(names.map((n) => readFileSync(path.join(dir, n), "utf8"))).toEqual(["one\n", "two\n", "three\n"]);
    expect(sink.counter.get("ConnectionCreatedCount")).toBe(3);
  });

  test("a failed write rolls the batch back to the channel and continues in a new file", async () => {
    const { dir, sink, channel } = setup({ "sink.rollInterval": "0" });
    await sink.start();
    await put(channel, [{ body: "x" }, { body: "y" }]);
    const file = (sink as unknown as { file: { write: unknown } | null });
    await sink.process();
    await put(channel, [{ body: "z" }]);
    // Break the open file handle: the next write fails.
    (file.file as { write: unknown }).write = async () => {
      throw new Error("disk full");
    };
    await expect(sink.process()).rejects.toThrow("disk full");
    expect(channel.size).toBe(1);
    expect(sink.counter.get("EventWriteFail")).toBe(1);
    await sink.process();
    await sink.stop();
    expect(files(dir).map((n) => readFileSync(path.join(dir, n), "utf8"))).toEqual(["x\ny\n", "z\n"]);
  });

  test("a take whose commit fails is cut from the file it reached: the retried batch is written once", async () => {
    const { dir, sink, channel } = setup({ "sink.rollInterval": "0" });
    await sink.start();
    await put(channel, [{ body: "x" }]);
    await sink.process();
    await put(channel, [{ body: "y" }, { body: "z" }]);
    const orig = channel.getTransaction.bind(channel);
    let failCommits = 1;
    channel.getTransaction = () => {
      const tx = orig();
      const commit = tx.commit.bind(tx);
      tx.commit = async () => {
        if (failCommits-- > 0) throw new Error("commit record not written");
        return commit();
      };
      return tx;
    };
    await expect(sink.process()).rejects.toThrow(/could not commit the take: commit record not written/);
    expect(channel.size).toBe(2);
    expect(files(dir).map((n) => readFileSync(path.join(dir, n), "utf8"))).toEqual(["x\n"]);
    await sink.process();
    await sink.stop();
    expect(files(dir).map((n) => readFileSync(path.join(dir, n), "utf8"))).toEqual(["x\n", "y\nz\n"]);
  });

  test("serializers: text without newline, header_and_text as Java's Map.toString", async () => {
    const a = setup({ "sink.serializer": "TEXT", "sink.serializer.appendNewline": "false", "sink.rollInterval": "0" });
    await a.sink.start();
    await put(a.channel, [{ body: "p" }, { body: "q" }]);
    await a.sink.process();
    await a.sink.stop();
    expect(readFileSync(path.join(a.dir, readdirSync(a.dir)[0]), "utf8")).toBe("pq");

    const b = setup({ "sink.serializer": "header_and_text", "sink.rollInterval": "0" });
    await b.sink.start();
    await put(b.channel, [{ body: "hello", headers: { host: "h1", ts: "5" } }, { body: "bare" }]);
    await b.sink.process();
    await b.sink.stop();
    expect(readFileSync(path.join(b.dir, readdirSync(b.dir)[0]), "utf8")).toBe("{host=h1, ts=5} hello\n{} bare\n");
    expect(javaMapString({})).toBe("{}");
  });

  test("unknown serializer is a configuration error naming the key", () => {
    expect(() => setup({ "sink.serializer": "nope" })).toThrow(/sink\.serializer: unknown serializer "nope"/);
    // Serializers are registry components like the rest, by Flume's names and class names.
    expect(lookupComponent("serializer", "org.apache.flume.serialization.FlumeEventAvroEventSerializer$Builder")?.schema.type).toBe("avro_event");
  });

  for (const codec of ["null", "deflate"]) {
    needsPythonAvro.test(`avro_event files (codec ${codec}) are read back by Python's avro package`, async () => {
      const { dir, sink, channel } = setup({
        "sink.serializer": "avro_event",
        "sink.serializer.compressionCodec": codec,
        "sink.serializer.syncIntervalBytes": "100",
        "sink.rollInterval": "0",
        "sink.batchSize": "4",
      });
      await sink.start();
      const events: { body: string; headers?: Record<string, string> }[] = Array.from({ length: 10 }, (_, i) => ({ body: `event ${i} ${"é".repeat(i)}`, headers: { n: String(i), host: "h" } }));
      events.push({ body: "a line without headers" });
      await put(channel, events);
      while ((await sink.process()) === "READY");
      // Flushed but still open: what is on disk already reads as a complete file.
      const file = path.join(dir, readdirSync(dir)[0]);
      const script = [
        "import sys, json",
        "from avro.datafile import DataFileReader",
        "from avro.io import DatumReader",
        "r = DataFileReader(open(sys.argv[1], 'rb'), DatumReader())",
        "print(json.dumps({'codec': r.get_meta('avro.codec').decode(), 'schema': json.loads(r.get_meta('avro.schema').decode()), 'events': [{'headers': e['headers'], 'body': e['body'].decode('utf-8')} for e in r]}))",
      ].join("\n");
      const readBack = (): { codec: string; schema: { name: string }; events: unknown[] } => {
        const r = spawnSync(PYTHON, ["-c", script, file], { encoding: "utf8" });
        if (r.status !== 0) throw new Error(r.stderr);
        return JSON.parse(r.stdout);
      };
      const open = readBack();
      expect(open.events).toEqual(events.map((e) => ({ headers: e.headers ?? {}, body: e.body })));
      await sink.stop();
      const closed = readBack();
      expect(closed.codec).toBe(codec);
      expect(closed.schema.name).toBe("Event");
      expect(closed.events).toHaveLength(11);
    });
  }

  test("two sinks on one directory started in the same millisecond (or a restart within the same second with ROLLTIME) never write into each other's file", async () => {
    const t = tempDir("flume-fileroll-names-");
    cleanups.push(t.cleanup);
    const clock = new VirtualClock(1_700_000_000_000);
    const make = (name: string, extra: Record<string, string> = {}) => {
      const ctx = context(name);
      ctx.clock = clock;
      const sink = build(definition, { "sink.directory": t.dir, "sink.rollInterval": "0", ...extra }, ctx) as RollingFileSink;
      const channel = new MemoryChannel("c1", { capacity: 100, transactionCapacity: 100 });
      channel.start();
      sink.setChannel(channel);
      return { sink, channel };
    };
    const a = make("k1");
    const b = make("k2");
    await a.sink.start();
    await b.sink.start();
    await putBodies(a.channel, ["from-a-1", "from-a-2"]);
    await putBodies(b.channel, ["b"]);
    await a.sink.process();
    await b.sink.process();
    await a.sink.stop();
    await b.sink.stop();

    for (const run of ["r1", "r2"]) {
      const r = make("k3", { "sink.pathManager": "ROLLTIME" });
      await r.sink.start();
      await putBodies(r.channel, [run]);
      await r.sink.process();
      await r.sink.stop();
    }
    const all = readdirSync(t.dir)
      .flatMap((n) => readFileSync(path.join(t.dir, n), "utf8").split("\n"))
      .filter((l) => l !== "")
      .sort();
    expect(all).toEqual(["b", "from-a-1", "from-a-2", "r1", "r2"]);
  });
});

async function putBodies(channel: MemoryChannel, bodies: string[]): Promise<void> {
  const tx = channel.getTransaction();
  tx.begin();
  for (const b of bodies) tx.put(createEvent(b, {}));
  await tx.commit();
  tx.close();
}

/** A real full disk: a 1 MiB tmpfs, unmounted after the test. */
describe("the serializer a file_roll sink names, checked through the registry", () => {
  /** seq -> memory -> file_roll k1; `serializer` lines from line 9. */
  const problems = (serializer: string[]) =>
    validateConfigText(
      ["a1.sources = r1", "a1.channels = c1", "a1.sinks = k1", "a1.sources.r1.type = seq", "a1.sources.r1.channels = c1", "a1.channels.c1.type = memory", "a1.sinks.k1.type = file_roll", "a1.sinks.k1.channel = c1", ...serializer, "a1.sinks.k1.sink.directory = /tmp/out", ""].join("\n"),
      "f.conf",
      {},
      registry,
    ).problems.map((p) => `${p.line} ${p.severity} ${p.component} ${p.key}: ${p.message}${p.hint ? ` (${p.hint})` : ""}`);

  test("an unknown serializer is an error at its line, with the names it might be", () => {
    expect(problems(["a1.sinks.k1.sink.serializer = header_and_txt"])).toEqual(['9 error sink k1 sink.serializer: unknown serializer type "header_and_txt" (did you mean "header_and_text"?)']);
  });

  test("the serializer's own settings are checked against its schema at their lines: a bad value, a misspelt key", () => {
    expect(problems(["a1.sinks.k1.sink.serializer = avro_event", "a1.sinks.k1.sink.serializer.syncIntervalBytes = lots", "a1.sinks.k1.sink.serializer.compresionCodec = deflate"])).toEqual([
      '10 error sink k1 sink.serializer.syncIntervalBytes: expected a whole number, got "lots" (a whole number, at least 1; default 2048000)',
      "11 warning sink k1 sink.serializer.compresionCodec: is not a property of serializer type avro_event, so it is ignored (did you mean sink.serializer.compressionCodec?)",
    ]);
    expect(problems(["a1.sinks.k1.sink.serializer = TEXT", "a1.sinks.k1.sink.serializer.appendNewline = false"])).toEqual([]);
  });
});

function smallDisk(): string {
  const t = tempDir("flume-fileroll-full-");
  cleanups.push(t.cleanup);
  const mnt = path.join(t.dir, "disk");
  mkdirSync(mnt);
  const mount = spawnSync("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", mnt], { encoding: "utf8" });
  expect({ mount: mount.status, stderr: mount.stderr }).toEqual({ mount: 0, stderr: "" });
  cleanups.push(() => spawnSync("umount", ["-l", mnt]));
  return mnt;
}

describe("file_roll sink when its directory or disk fails", () => {
  test("the directory removed while a file is open: later batches go to a new file in the recreated directory, none into the deleted file", async () => {
    const t = tempDir("flume-fileroll-rmdir-");
    cleanups.push(t.cleanup);
    const dir = path.join(t.dir, "out");
    const sink = build(definition, { "sink.directory": dir, "sink.rollInterval": "0" }, context("k1")) as RollingFileSink;
    const channel = new MemoryChannel("c1", { capacity: 100, transactionCapacity: 100 });
    channel.start();
    sink.setChannel(channel);
    await sink.start();
    await putBodies(channel, ["a", "b"]);
    await sink.process();
    rmSync(dir, { recursive: true });

    await putBodies(channel, ["c", "d"]);
    // The sink may fail a batch (it goes back to the channel) but must recover on its own.
    for (let i = 0; i < 3 && channel.size > 0; i++) await sink.process().catch(() => "error");
    await sink.stop();
    expect(channel.size).toBe(0);
    const written = readdirSync(dir).map((n) => readFileSync(path.join(dir, n), "utf8"));
    expect(written.join("")).toBe("c\nd\n");
  });

  needsTmpfs.test("a batch that hits a full disk leaves no part of itself in the file; it is written once, whole, when space returns", async () => {
    const mnt = smallDisk();
    const dir = path.join(mnt, "out");
    const sink = build(definition, { "sink.directory": dir, "sink.rollInterval": "0", "sink.batchSize": "1000" }, context("k1")) as RollingFileSink;
    const channel = new MemoryChannel("c1", { capacity: 10000, transactionCapacity: 1000 });
    channel.start();
    sink.setChannel(channel);
    await sink.start();
    await putBodies(channel, ["first"]);
    await sink.process();
    const filler = path.join(mnt, "filler");
    writeFileSync(filler, Buffer.alloc(1024 * 1024 - 64 * 1024));
    const lines = Array.from({ length: 1000 }, (_, i) => `line-${i}`.padEnd(199, "x"));
    await putBodies(channel, lines);
    await expect(sink.process()).rejects.toThrow("ENOSPC");
    expect(channel.size).toBe(1000);
    rmSync(filler);
    await sink.process();
    await sink.stop();
    const all = readdirSync(dir)
      .sort()
      .map((n) => readFileSync(path.join(dir, n), "utf8"))
      .join("");
    expect(all).toBe(`first\n${lines.join("\n")}\n`);
  });
});
