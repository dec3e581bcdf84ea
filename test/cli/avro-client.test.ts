import { describe, expect, test, afterAll } from "bun:test";
import { spawn } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import path from "node:path";
import { Readable } from "node:stream";
import { bodyText, type Event } from "../../src/core/event.ts";
import { streamLines } from "../../src/cli/avro-client.ts";
import { CLI, ROOT, asyncCleanupsAfterEach, freePort, tempDir, FIXTURES, runCli } from "../support/helpers.ts";
import { drain, memoryChannel, startSource, texts } from "../support/rpc.ts";

const AVRO_RPC = path.join(FIXTURES, "avro-rpc");

const cleanups = asyncCleanupsAfterEach();

/** Runs `flume avro-client` as a child process without blocking this process's event loop. */
function avroClient(args: string[], input?: string): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, "avro-client", ...args], { cwd: ROOT, stdio: ["pipe", "pipe", "pipe"], env: { ...process.env, NO_COLOR: "1" } });
    let stderr = "";
    child.stderr.on("data", (d) => (stderr += d));
    child.stdout.resume();
    if (input !== undefined) child.stdin.end(input);
    else child.stdin.end();
    child.on("exit", (code) => resolve({ code, stderr }));
  });
}

async function source(props: Record<string, string> = {}, channel = memoryChannel()) {
  const s = await startSource(props, channel);
  cleanups.push(() => s.source.stop());
  return s;
}

describe("flume avro-client", () => {
  test("-F file -R headerFile: one event per line, headers from the file, exit 0", async () => {
    const { channel, port, source: src } = await source();
    const r = await avroClient(["-H", "127.0.0.1", "-p", String(port), "-F", path.join(AVRO_RPC, "avro-client-input.txt"), "-R", path.join(AVRO_RPC, "avro-client-headers.txt")]);
    expect(r.stderr).toContain("sent 7 events");
    expect(r.code).toBe(0);
    const got = await drain(channel);
    expect(texts(got)).toEqual(["line one", "line two", "line three", "line four", "line five", "line six", "line seven"]);
    expect(got[0].headers).toEqual({ host: "edge-01", origin: "fixture" });
    // flume-ng avro-client's batches: 5 then 2.
    expect(src.counter.values.AppendBatchReceivedCount).toBe(2);
  });

  test("standard input with --batch-size and --compression deflate; CRLF and a last line without newline", async () => {
    const { channel, port, source: src } = await source({ "compression-type": "deflate" });
    const r = await avroClient(["--host", "127.0.0.1", "--port", String(port), "--batch-size", "2", "--compression", "deflate"], "a\r\nb\nc\nlast");
    expect(r.code).toBe(0);
    expect(texts(await drain(channel))).toEqual(["a", "b", "c", "last"]);
    expect(src.counter.values.AppendBatchReceivedCount).toBe(2);
  });

  test("--dirname sends every file and renames it .COMPLETED", async () => {
    const { channel, port } = await source();
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    writeFileSync(path.join(tmp.dir, "one.log"), "1a\n1b\n");
    writeFileSync(path.join(tmp.dir, "two.log"), "2a\n");
    const r = await avroClient(["-H", "127.0.0.1", "-p", String(port), "--dirname", tmp.dir]);
    expect(r.code).toBe(0);
    expect(texts(await drain(channel)).sort()).toEqual(["1a", "1b", "2a"]);
    expect(existsSync(path.join(tmp.dir, "one.log.COMPLETED"))).toBe(true);
    expect(existsSync(path.join(tmp.dir, "two.log"))).toBe(false);
  });

  test("exits non-zero when the server answers FAILED", async () => {
    const { port } = await source({}, memoryChannel("c1", { capacity: 3, transactionCapacity: 3 }));
    const r = await avroClient(["-H", "127.0.0.1", "-p", String(port), "-F", path.join(AVRO_RPC, "avro-client-input.txt")]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/Status FAILED/);
  });

  test("exits non-zero when nothing listens, naming the address", async () => {
    const port = await freePort();
    const r = await avroClient(["-H", "127.0.0.1", "-p", String(port)], "x\n");
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`cannot connect to Avro source at 127.0.0.1:${port}`);
  });

  test("usage errors exit 2 with flume-ng's messages", async () => {
    const r = await avroClient(["-F", "x"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("Either --rpcProps or both --host and --port must be specified.");
  });

  test("line splitting as Java's readLine: \\n, \\r\\n and \\r, across any chunk boundary", async () => {
    const text = "a\r\nb\rc\n\nd\r\r\ne";
    const expected = ["a", "b", "c", "", "d", "", "e"];
    for (let cut = 0; cut <= text.length; cut++) {
      const batches: string[][] = [];
      const chunks = [Buffer.from(text.slice(0, cut)), Buffer.from(text.slice(cut))];
      const sent = await streamLines(Readable.from(chunks), 3, { h: "v" }, async (events: Event[]) => {
        batches.push(events.map(bodyText));
        expect(events[0].headers).toEqual({ h: "v" });
      });
      expect(batches.flat()).toEqual(expected);
      expect(sent).toBe(expected.length);
      expect(batches[0]).toHaveLength(3);
    }
  });
});

const scratch = tempDir("flume-cli-avro-client-");
afterAll(() => scratch.cleanup());

describe("flume avro-client: bad values are usage errors naming the option or file", () => {
  test("a port above 65535 exits 2 naming -p", () => {
    const r = runCli(["avro-client", "-H", "127.0.0.1", "-p", "70000"], { input: "" });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('flume avro-client: -p needs a port number from 1 to 65535, got "70000"');
  });

  test("a missing header file is named as the header file, exit 2, before connecting", () => {
    const missing = path.join(scratch.dir, "headers.properties");
    // port 1 on 127.0.0.1 refuses connections: the header file must be checked first
    const r = runCli(["avro-client", "-H", "127.0.0.1", "-p", "1", "-R", missing], { input: "" });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`flume avro-client: header file ${missing}: no such file`);
  });

  test("a missing input file is named, exit 2, before connecting", () => {
    const missing = path.join(scratch.dir, "input.txt");
    const r = runCli(["avro-client", "-H", "127.0.0.1", "-p", "1", "-F", missing], { input: "" });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`flume avro-client: input file ${missing}: no such file`);
  });

  test("a missing --dirname is named, exit 2, before connecting", () => {
    const missing = path.join(scratch.dir, "spool");
    const r = runCli(["avro-client", "-H", "127.0.0.1", "-p", "1", "--dirname", missing], { input: "" });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`flume avro-client: directory ${missing}: no such directory`);
  });
});
