import { describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { definition, RollingFileSink } from "../../../src/components/sinks/file-roll.ts";
import { findSerializer } from "../../../src/components/serializers/serializer.ts";
import { javaMapString } from "../../../src/components/serializers/header-and-text.ts";
import { createEvent } from "../../../src/core/event.ts";
import { MemoryChannel } from "../../../src/core/memory-channel.ts";
import { VirtualClock } from "../../../src/core/virtual-clock.ts";
import { cleanupsAfterEach, tempDir } from "../../support/helpers.ts";
import { build, context } from "../../support/components.ts";

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
  for (const e of events) tx.put(createEvent(e.body, e.headers ?? {}));
  await tx.commit();
  tx.close();
}

const counterOf = (name: string) => Number(/-(\d+)(?:\.[^.-]*)?$/.exec(name)?.[1]);
const files = (dir: string) => readdirSync(dir).sort((a, b) => counterOf(a) - counterOf(b));

/** Python's avro package from Debian (python3-avro), the second Avro implementation. */
function pythonWithAvro(): string | null {
  for (const py of ["python3", "/usr/bin/python3"]) {
    const r = spawnSync(py, ["-c", "import avro.datafile"], { encoding: "utf8" });
    if (r.status === 0) return py;
  }
  return null;
}

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
    expect(findSerializer("org.apache.flume.serialization.FlumeEventAvroEventSerializer$Builder")?.schema.type).toBe("avro_event");
  });

  for (const codec of ["null", "deflate"]) {
    test(`avro_event files (codec ${codec}) are read back by python3-avro`, async () => {
      const { dir, sink, channel } = setup({
        "sink.serializer": "avro_event",
        "sink.serializer.compressionCodec": codec,
        "sink.serializer.syncIntervalBytes": "100",
        "sink.rollInterval": "0",
        "sink.batchSize": "4",
      });
      await sink.start();
      const events = Array.from({ length: 10 }, (_, i) => ({ body: `event ${i} ${"é".repeat(i)}`, headers: { n: String(i), host: "h" } }));
      await put(channel, events);
      while ((await sink.process()) === "READY");
      // Flushed but still open: what is on disk already reads as a complete file.
      const file = path.join(dir, readdirSync(dir)[0]);
      const py = pythonWithAvro();
      if (py === null) {
        console.warn("SKIPPED avro_event cross-check: python3 cannot import avro (apt-get install -y python3-avro)");
        await sink.stop();
        return;
      }
      const script = [
        "import sys, json",
        "from avro.datafile import DataFileReader",
        "from avro.io import DatumReader",
        "r = DataFileReader(open(sys.argv[1], 'rb'), DatumReader())",
        "print(json.dumps({'codec': r.get_meta('avro.codec').decode(), 'schema': json.loads(r.get_meta('avro.schema').decode()), 'events': [{'headers': e['headers'], 'body': e['body'].decode('utf-8')} for e in r]}))",
      ].join("\n");
      const readBack = (): { codec: string; schema: { name: string }; events: unknown[] } => {
        const r = spawnSync(py, ["-c", script, file], { encoding: "utf8" });
        if (r.status !== 0) throw new Error(r.stderr);
        return JSON.parse(r.stdout);
      };
      const open = readBack();
      expect(open.events).toEqual(events.map((e) => ({ headers: e.headers, body: e.body })));
      await sink.stop();
      const closed = readBack();
      expect(closed.codec).toBe(codec);
      expect(closed.schema.name).toBe("Event");
      expect(closed.events).toHaveLength(10);
    });
  }
});
