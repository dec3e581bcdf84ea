/**
 * The two facts of a Hadoop client configuration the hdfs sink uses, as Flume's Hadoop client
 * finds them: fs.defaultFS (core-site.xml), for an hdfs.path without a file system, and
 * dfs.namenode.http-address (hdfs-site.xml), the NameNode's WebHDFS address. Read from
 * $HADOOP_CONF_DIR, else /etc/hadoop/conf.
 */
import { readFileSync } from "node:fs";
import path from "node:path";

export interface HadoopConf {
  /** Where the files were looked for. */
  dir: string;
  defaultFS?: string;
  httpAddress?: string;
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
  return { dir, defaultFS: core["fs.defaultFS"] ?? core["fs.default.name"], httpAddress: hdfs["dfs.namenode.http-address"] };
}
