/**
 * The facts of a Hadoop client configuration the hdfs sink uses, as Flume's Hadoop client finds
 * them: fs.defaultFS (core-site.xml), for an hdfs.path without a file system;
 * dfs.namenode.http-address (hdfs-site.xml), the NameNode's WebHDFS address; dfs.replication and
 * dfs.blocksize of the files the client creates (the NameNode's own when not set). Read from
 * $HADOOP_CONF_DIR, else /etc/hadoop/conf.
 */
import { readFileSync } from "node:fs";
import path from "node:path";

export interface HadoopConf {
  /** Where the files were looked for. */
  dir: string;
  defaultFS?: string;
  httpAddress?: string;
  replication?: number;
  /** Bytes. */
  blockSize?: number;
}

/** A size as Hadoop writes it: 134217728, 128m, 1g. */
export function parseSize(v: string | undefined): number | undefined {
  const m = /^\s*(\d+)\s*([kmgtp]?)\s*$/i.exec(v ?? "");
  if (!m) return undefined;
  return Number(m[1]) * 1024 ** "_kmgtp".indexOf(m[2].toLowerCase() || "_");
}

function properties(file: string): Record<string, string> {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return {};
  }
  const out: Record<string, string> = {};
  for (const m of text.matchAll(/<property>([\s\S]*?)<\/property>/g)) {
    const name = /<name>\s*([^<]*?)\s*<\/name>/.exec(m[1])?.[1];
    const value = /<value>\s*([^<]*?)\s*<\/value>/.exec(m[1])?.[1];
    if (name !== undefined && value !== undefined) out[name] = value;
  }
  return out;
}

export function readHadoopConf(env: Readonly<Record<string, string | undefined>> = process.env): HadoopConf {
  const dir = env.HADOOP_CONF_DIR ?? "/etc/hadoop/conf";
  const core = properties(path.join(dir, "core-site.xml"));
  const hdfs = properties(path.join(dir, "hdfs-site.xml"));
  const conf: HadoopConf = { dir, defaultFS: core["fs.defaultFS"] ?? core["fs.default.name"], httpAddress: hdfs["dfs.namenode.http-address"] };
  const replication = parseSize(hdfs["dfs.replication"]);
  const blockSize = parseSize(hdfs["dfs.blocksize"] ?? hdfs["dfs.block.size"]);
  if (replication) conf.replication = replication;
  if (blockSize) conf.blockSize = blockSize;
  return conf;
}
