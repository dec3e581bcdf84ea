/**
 * The Kafka client's WebAssembly codecs (src/kafka/wasm-codecs.ts): not compiled when the client
 * loads, compiled once the first compressed batch needs them, and then the client's own.
 */
import { expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import path from "node:path";

const ROOT = path.resolve(import.meta.dir, "../..");
const VALUE = "a record value, a record value, a record value";

test("the Kafka client loads and makes a producer without compiling its WebAssembly; the first lz4 or snappy batch compiles it once", () => {
  // A fresh process in the project, as an agent whose configuration has a Kafka sink.
  const script = `
    let compiled = 0;
    const Module = WebAssembly.Module;
    WebAssembly.Module = function (bytes) { compiled++; return new Module(bytes); };
    const kafka = await import("@platformatic/kafka");
    const producer = new kafka.Producer({ clientId: "t", bootstrapBrokers: ["127.0.0.1:1"] });
    const atLoad = compiled;
    const body = Buffer.from("${VALUE}");
    const { lz4, snappy } = kafka.compressionsAlgorithms;
    const back = [lz4.decompressSync(lz4.compressSync(body)), snappy.decompressSync(snappy.compressSync(body))].map(String);
    console.log(JSON.stringify({ atLoad, afterUse: compiled, back }));
    await producer.close();
  `;
  const r = spawnSync(process.execPath, ["-e", script], { cwd: ROOT, encoding: "utf8" });
  expect(r.stderr).toBe("");
  expect(JSON.parse(r.stdout.trim())).toEqual({ atLoad: 0, afterUse: 1, back: [VALUE, VALUE] });
});
