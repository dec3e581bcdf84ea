// The native HDFS client against a real NameNode and DataNode (Hadoop 3.3.6): files across
// block boundaries, a broken stream closed by lease recovery, errors naming Hadoop's exception.
import { afterAll, beforeAll, describe, expect } from "bun:test";
import { HdfsError } from "../../../../src/io/hdfs/file-system.ts";
import { NativeHdfsClient } from "../../../../src/io/hdfs/native/client.ts";
import type { HdfsOutputStream } from "../../../../src/io/hdfs/native/output-stream.ts";
import { type HdfsCluster, startHdfs } from "../../../support/hdfs.ts";
import { needsJvm } from "../../../support/jvm.ts";

let hdfs: HdfsCluster;
let client: NativeHdfsClient;
beforeAll(async () => {
  if (!needsJvm.holds) return;
  hdfs = await startHdfs();
  await hdfs.mkdirOpen("/n");
  // 1 MB blocks (the NameNode's smallest by default): a few MB cross several.
  client = new NativeHdfsClient({ host: "127.0.0.1", port: hdfs.rpcPort, user: "flume", timeoutMs: 60_000, blockSize: 1024 * 1024 });
}, 300_000);
afterAll(async () => {
  await client?.close();
  await hdfs?.stop();
}, 60_000);

function bytes(n: number, seed: number): Buffer {
  const b = Buffer.allocUnsafe(n);
  let x = seed;
  for (let i = 0; i < n; i++) b[i] = (x = (x * 1103515245 + 12345) >>> 0) >>> 24;
  return b;
}

describe("native HDFS client on a real HDFS", () => {
  needsJvm.test(
    "batches that end mid-chunk and cross 1 MB block boundaries read back byte for byte with -cat; the file has the client's block size",
    async () => {
      const parts = [bytes(700_001, 1), bytes(900_000, 2), bytes(3, 3), bytes(1_000_003, 4)];
      await client.create("/n/blocks.tmp", parts[0]);
      for (const p of parts.slice(1)) await client.append("/n/blocks.tmp", p);
      expect(await client.rename("/n/blocks.tmp", "/n/blocks")).toBe(true);
      expect((await hdfs.cat("/n/blocks")).equals(Buffer.concat(parts))).toBe(true);
      const stat = await hdfs.fs(["-stat", "%o %b %r", "/n/blocks"]);
      expect(stat.stdout.trim()).toBe(`1048576 ${2_600_007} 1`);
      expect(await client.list("/n")).toEqual([expect.objectContaining({ name: "blocks", type: "FILE", length: 2_600_007 })]);
    },
    120_000,
  );

  needsJvm.test(
    "a stream whose pipeline broke: the next append fails naming the path, and rename closes the file by lease recovery with every acknowledged byte",
    async () => {
      await client.create("/n/broken.tmp", Buffer.from("one\n"));
      await client.append("/n/broken.tmp", Buffer.from("two\n"));
      const streams = (client as unknown as { streams: Map<string, HdfsOutputStream> }).streams;
      streams.get("/n/broken.tmp")?.abort(new Error("the DataNode went away"));
      const err = await client.append("/n/broken.tmp", Buffer.from("three\n")).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(HdfsError);
      expect((err as Error).message).toBe("APPEND /n/broken.tmp: the DataNode went away");
      expect(await client.rename("/n/broken.tmp", "/n/broken")).toBe(true);
      expect((await hdfs.cat("/n/broken")).toString()).toBe("one\ntwo\n");
    },
    120_000,
  );

  needsJvm.test(
    "errors name the operation, the path and Hadoop's exception: a file that exists, a directory without write permission; marks round-trip",
    async () => {
      await client.create("/n/exists.tmp", Buffer.from("x"));
      await client.rename("/n/exists.tmp", "/n/exists");
      const exists = (await client.create("/n/exists", Buffer.from("y")).catch((e: unknown) => e)) as HdfsError;
      expect(exists.message).toMatch(/^CREATE \/n\/exists: FileAlreadyExistsException: /);
      expect(exists.remote).toBe("FileAlreadyExistsException");
      await hdfs.fs(["-mkdir", "-p", "/locked"]);
      await hdfs.fs(["-chmod", "755", "/locked"]);
      const denied = (await client.create("/locked/f.tmp", Buffer.from("z")).catch((e: unknown) => e)) as HdfsError;
      expect(denied.message).toMatch(/^CREATE \/locked\/f\.tmp: AccessControlException: Permission denied: user=flume, access=WRITE, inode="\/locked"/);
      expect(await client.setMark("/n/exists", "flume.writer", "host/a1/k1")).toBe(true);
      expect(await client.getMark("/n/exists", "flume.writer")).toBe("host/a1/k1");
      expect(await client.getMark("/n/exists", "other")).toBeNull();
      expect(await client.list("/n/none")).toBeNull();
      expect(await client.rename("/n/none", "/n/x")).toBe(false);
      expect(await client.delete("/n/exists")).toBe(true);
      expect(await client.delete("/n/exists")).toBe(false);
    },
    120_000,
  );
});
