/**
 * Where an hdfs sink writes, and the client for it: Hadoop's native protocols for hdfs://
 * (src/io/hdfs/native/), WebHDFS for webhdfs:// and swebhdfs://, the local disk for file://.
 */
import { useHardwareCrc32c } from "../crc32c.ts";
import type { DfsClient } from "./file-system.ts";
import { LocalClient } from "./local.ts";
import { NativeHdfsClient } from "./native/client.ts";
import { WebHdfsClient } from "./webhdfs.ts";

export type DfsTarget =
  /** replication and blockSize of new files: the Hadoop configuration's, else the NameNode's. */
  | { kind: "hdfs"; host: string; port: number; replication?: number; blockSize?: number }
  | { kind: "webhdfs"; nameNode: URL }
  | { kind: "local" };

export interface DfsClientOptions {
  user: string;
  proxyUser?: string;
  timeoutMs: number;
}

export function openDfsClient(target: DfsTarget, o: DfsClientOptions): DfsClient {
  switch (target.kind) {
    case "local":
      return new LocalClient();
    case "webhdfs":
      return new WebHdfsClient({ nameNode: target.nameNode, ...o });
    case "hdfs":
      // A checksum every 512 bytes written: with the CPU's instruction once it is loaded (the tables until then give the same).
      void useHardwareCrc32c();
      return new NativeHdfsClient({ host: target.host, port: target.port, replication: target.replication, blockSize: target.blockSize, ...o });
  }
}
