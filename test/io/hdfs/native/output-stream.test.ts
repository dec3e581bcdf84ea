// How a file's stream asks the NameNode for its next block, with the NameNode played by a stand-in
// object (the real exchange under load is in client.test.ts): NotReplicatedYetException, which a
// NameNode answers while the DataNodes have not yet reported the previous block, is waited out.
import { expect, test } from "bun:test";
import { RemoteError } from "../../../../src/io/hdfs/native/ipc.ts";
import type { NameNode } from "../../../../src/io/hdfs/native/namenode.ts";
import { HdfsOutputStream } from "../../../../src/io/hdfs/native/output-stream.ts";

const NOT_YET = "org.apache.hadoop.hdfs.server.namenode.NotReplicatedYetException";
const DENIED = "org.apache.hadoop.security.AccessControlException";

function streamWith(answers: (call: number) => RemoteError, timeoutMs: number) {
  let calls = 0;
  const nn = {
    addBlock: async () => {
      throw answers(++calls);
    },
    abandonBlock: async () => undefined,
  } as unknown as NameNode;
  const stream = new HdfsOutputStream(nn, "/d/f.tmp", 1n, { clientName: "c", bytesPerChecksum: 512, packetData: 65536, timeoutMs, sync: false, blockSize: 1 << 20 });
  return { stream, calls: () => calls };
}

test("addBlock answered NotReplicatedYetException is asked again; the next answer decides", async () => {
  const { stream, calls } = streamWith((n) => (n < 3 ? new RemoteError(NOT_YET, "Not replicated yet: /d/f.tmp") : new RemoteError(DENIED, "Permission denied")), 10_000);
  const err = await stream.write(new Uint8Array(10)).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(RemoteError);
  expect((err as RemoteError).shortName).toBe("AccessControlException");
  expect(calls()).toBe(3);
});

test("NotReplicatedYetException past the call timeout fails the write with Hadoop's exception", async () => {
  const { stream, calls } = streamWith(() => new RemoteError(NOT_YET, "Not replicated yet: /d/f.tmp"), 300);
  const err = await stream.write(new Uint8Array(10)).catch((e: unknown) => e);
  expect((err as RemoteError).shortName).toBe("NotReplicatedYetException");
  expect(calls()).toBeGreaterThan(1);
});

test("any other refusal of addBlock is not asked again", async () => {
  const { stream, calls } = streamWith(() => new RemoteError(DENIED, "Permission denied"), 10_000);
  await expect(stream.write(new Uint8Array(10))).rejects.toThrow("Permission denied");
  expect(calls()).toBe(1);
});
