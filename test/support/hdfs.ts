/**
 * A real HDFS for the tests: Apache Hadoop's NameNode and DataNode daemons from Maven Central's
 * jars (the HADOOP set, jvm-artifacts.ts) started through the JVM harness (jvm.ts), formatted in
 * a temp dir, on free ports of 127.0.0.1, permissions and WebHDFS on, no Kerberos. Hadoop's own
 * FsShell from the same jars is the reader tests check files with (`-ls`, `-text`, `-cat`).
 *
 * `startHdfs()` resolves once the NameNode has left safe mode and every DataNode has registered.
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { HADOOP } from "./jvm-artifacts.ts";
import { type JvmPeer, resolveClasspath, startJvm } from "./jvm.ts";
import { freePort } from "./helpers.ts";

export interface HdfsOptions {
  /** DataNodes to start: 1 by default. */
  dataNodes?: number;
  /** dfs.replication: the number of DataNodes by default. */
  replication?: number;
  /** More hdfs-site.xml properties. */
  site?: Record<string, string>;
}

export interface ShellResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface HdfsCluster {
  /** hdfs://127.0.0.1:<rpc port> */
  readonly uri: string;
  /** The NameNode's HTTP port (WebHDFS: http://127.0.0.1:<port>/webhdfs/v1). */
  readonly httpPort: number;
  readonly rpcPort: number;
  /** The Hadoop client's classpath (the config dir first): for real Flume's HDFS sink too. */
  readonly clientClasspath: string;
  /** The directory with core-site.xml and hdfs-site.xml. */
  readonly confDir: string;
  readonly nameNode: JvmPeer;
  readonly dataNodes: JvmPeer[];
  /** Runs `hdfs dfs <args>` (FsShell) as `user` (the superuser, this process's user, by default). */
  fs(args: string[], user?: string): Promise<ShellResult>;
  /** `hdfs dfsadmin <args>` as the superuser. */
  admin(args: string[]): Promise<ShellResult>;
  /** `-text` of a file (decodes SequenceFiles and compressed files); throws on a non-zero exit. */
  text(file: string): Promise<string>;
  /** `-cat` of a file as bytes; throws on a non-zero exit. */
  cat(file: string): Promise<Buffer>;
  /** The paths under `dir` (`-ls -R`, files only), sorted. */
  list(dir: string): Promise<string[]>;
  /** `-mkdir -p` then `-chmod 777`: a directory anyone may write. */
  mkdirOpen(dir: string): Promise<void>;
  /** Stops the NameNode and starts it again on the same ports and name dir. */
  restartNameNode(): Promise<void>;
  stop(): Promise<void>;
}

export class HdfsShellError extends Error {}

const xml = (props: Record<string, string>) =>
  `<?xml version="1.0"?>\n<configuration>\n${Object.entries(props)
    .map(([k, v]) => `  <property><name>${k}</name><value>${v}</value></property>`)
    .join("\n")}\n</configuration>\n`;

// Hadoop logs through log4j 1 (reload4j): INFO to stdout, which the JVM harness keeps.
const LOG4J = `log4j.rootLogger=INFO,console
log4j.appender.console=org.apache.log4j.ConsoleAppender
log4j.appender.console.target=System.err
log4j.appender.console.layout=org.apache.log4j.PatternLayout
log4j.appender.console.layout.ConversionPattern=%d{ISO8601} %p %c{2}: %m%n
log4j.logger.org.apache.hadoop.util.NativeCodeLoader=ERROR
`;

const SHELL_LOG4J = "log4j.rootLogger=WARN,console\nlog4j.appender.console=org.apache.log4j.ConsoleAppender\nlog4j.appender.console.target=System.err\nlog4j.appender.console.layout=org.apache.log4j.PatternLayout\nlog4j.appender.console.layout.ConversionPattern=%p %c{1}: %m%n\nlog4j.logger.org.apache.hadoop.util.NativeCodeLoader=ERROR\n";

// Hadoop 3.3 predates Java 17's closed modules: JAXB (WebHDFS's JSON) needs java.lang opened.
const OPENS = ["java.lang", "java.util", "java.nio", "sun.nio.ch", "java.lang.reflect", "java.net"].flatMap((p) => ["--add-opens", `java.base/${p}=ALL-UNNAMED`]);
const DAEMON_JVM = ["-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.net.preferIPv4Stack=true", ...OPENS];
const SHELL_JVM = ["-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.net.preferIPv4Stack=true", ...OPENS];

export async function hadoopClasspath(): Promise<string> {
  return resolveClasspath(HADOOP);
}

/** Starts a NameNode and `dataNodes` DataNodes; see HdfsOptions. */
export async function startHdfs(opts: HdfsOptions = {}): Promise<HdfsCluster> {
  const jars = await hadoopClasspath();
  const root = mkdtempSync(path.join(tmpdir(), "flume-hdfs-"));
  const confDir = path.join(root, "conf");
  const shellConfDir = path.join(root, "shell-conf");
  mkdirSync(confDir);
  mkdirSync(shellConfDir);
  const rpcPort = await freePort();
  const httpPort = await freePort();
  const uri = `hdfs://127.0.0.1:${rpcPort}`;
  const nDataNodes = opts.dataNodes ?? 1;
  const core = xml({ "fs.defaultFS": uri, "hadoop.tmp.dir": path.join(root, "tmp"), "hadoop.security.authentication": "simple" });
  const site = xml({
    "dfs.namenode.name.dir": path.join(root, "name"),
    "dfs.namenode.rpc-address": `127.0.0.1:${rpcPort}`,
    "dfs.namenode.http-address": `127.0.0.1:${httpPort}`,
    "dfs.namenode.secondary.http-address": "127.0.0.1:0",
    "dfs.replication": String(opts.replication ?? nDataNodes),
    "dfs.permissions.enabled": "true",
    "dfs.webhdfs.enabled": "true",
    "dfs.namenode.safemode.extension": "0",
    "dfs.namenode.safemode.min.datanodes": "0",
    "dfs.namenode.datanode.registration.ip-hostname-check": "false",
    "dfs.datanode.hostname": "127.0.0.1",
    "dfs.heartbeat.interval": "1",
    "dfs.namenode.heartbeat.recheck-interval": "5000",
    "dfs.client.block.write.replace-datanode-on-failure.enable": "false",
    "dfs.namenode.fs-limits.min-block-size": "1024",
    "dfs.datanode.du.reserved": "0",
    "dfs.support.append": "true",
    ...opts.site,
  });
  for (const dir of [confDir, shellConfDir]) {
    writeFileSync(path.join(dir, "core-site.xml"), core);
    writeFileSync(path.join(dir, "hdfs-site.xml"), site);
  }
  writeFileSync(path.join(confDir, "log4j.properties"), LOG4J);
  webapps(confDir);
  writeFileSync(path.join(shellConfDir, "log4j.properties"), SHELL_LOG4J);
  const daemonCp = `${confDir}${path.delimiter}${jars}`;
  const shellCp = `${shellConfDir}${path.delimiter}${jars}`;

  const format = await runJava(daemonCp, "org.apache.hadoop.hdfs.server.namenode.NameNode", ["-format", "-nonInteractive", "-force"], undefined, root, DAEMON_JVM, 180_000);
  if (format.code !== 0) throw new HdfsShellError(`NameNode -format failed (exit ${format.code}):\n${tailOf(format.stderr + format.stdout, 40)}`);

  const startNameNode = () =>
    startJvm({
      name: "hdfs namenode",
      classpath: daemonCp,
      mainClass: "org.apache.hadoop.hdfs.server.namenode.NameNode",
      jvmArgs: DAEMON_JVM,
      cwd: root,
      ready: { port: rpcPort, http: `http://127.0.0.1:${httpPort}/jmx?qry=Hadoop:service=NameNode,name=NameNodeInfo` },
    });
  let nameNode = await startNameNode();
  const dataNodes: JvmPeer[] = [];
  const cluster: HdfsCluster = {
    uri,
    httpPort,
    rpcPort,
    clientClasspath: shellCp,
    confDir: shellConfDir,
    get nameNode() {
      return nameNode;
    },
    dataNodes,
    fs: (args, user) => runJava(shellCp, "org.apache.hadoop.fs.FsShell", args, user, root, SHELL_JVM, 120_000),
    admin: (args) => runJava(shellCp, "org.apache.hadoop.hdfs.tools.DFSAdmin", args, undefined, root, SHELL_JVM, 120_000),
    async text(file) {
      return (await checked(cluster.fs(["-text", file]), `-text ${file}`)).stdout;
    },
    async cat(file) {
      const r = await runJava(shellCp, "org.apache.hadoop.fs.FsShell", ["-cat", file], undefined, root, SHELL_JVM, 120_000, true);
      if (r.code !== 0) throw new HdfsShellError(`hdfs dfs -cat ${file}: exit ${r.code}: ${tailOf(r.stderr, 20)}`);
      return r.bytes as Buffer;
    },
    async list(dir) {
      const r = await cluster.fs(["-ls", "-R", dir]);
      if (r.code !== 0) {
        if (/No such file or directory/.test(r.stderr)) return [];
        throw new HdfsShellError(`hdfs dfs -ls -R ${dir}: exit ${r.code}: ${tailOf(r.stderr, 20)}`);
      }
      return r.stdout
        .split("\n")
        .filter((l) => l.startsWith("-"))
        .map((l) => l.slice(l.indexOf(" /") + 1).trim())
        .sort();
    },
    async mkdirOpen(dir) {
      await checked(cluster.fs(["-mkdir", "-p", dir]), `-mkdir -p ${dir}`);
      await checked(cluster.fs(["-chmod", "777", dir]), `-chmod 777 ${dir}`);
    },
    async restartNameNode() {
      await nameNode.stop();
      nameNode = await startNameNode();
      await waitLive(httpPort, dataNodes.length, nameNode);
    },
    async stop() {
      for (const dn of dataNodes) await dn.stop(5000);
      await nameNode.stop(5000);
      rmSync(root, { recursive: true, force: true });
    },
  };
  try {
    for (let i = 0; i < nDataNodes; i++) {
      const [data, http, ipc] = [await freePort(), await freePort(), await freePort()];
      const dnConf = path.join(root, `dn${i}-conf`);
      mkdirSync(dnConf);
      writeFileSync(path.join(dnConf, "core-site.xml"), core);
      writeFileSync(path.join(dnConf, "log4j.properties"), LOG4J);
      webapps(dnConf);
      writeFileSync(
        path.join(dnConf, "hdfs-site.xml"),
        site.replace(
          "</configuration>",
          `${xml({
            "dfs.datanode.data.dir": path.join(root, `data${i}`),
            "dfs.datanode.address": `127.0.0.1:${data}`,
            "dfs.datanode.http.address": `127.0.0.1:${http}`,
            "dfs.datanode.ipc.address": `127.0.0.1:${ipc}`,
          })
            .split("<configuration>")[1]
            .replace("</configuration>", "")}</configuration>`,
        ),
      );
      dataNodes.push(
        await startJvm({
          name: `hdfs datanode ${i}`,
          classpath: `${dnConf}${path.delimiter}${jars}`,
          mainClass: "org.apache.hadoop.hdfs.server.datanode.DataNode",
          jvmArgs: DAEMON_JVM,
          cwd: root,
          ready: { port: data },
        }),
      );
    }
    await waitLive(httpPort, nDataNodes, nameNode);
  } catch (e) {
    await cluster.stop();
    throw e;
  }
  return cluster;
}

/** Waits until `n` DataNodes are live and the NameNode is out of safe mode (its JMX says so). */
async function waitLive(httpPort: number, n: number, nameNode: JvmPeer, timeoutMs = 120_000): Promise<void> {
  const started = Date.now();
  let last = "";
  for (;;) {
    try {
      const r = await fetch(`http://127.0.0.1:${httpPort}/jmx?qry=Hadoop:service=NameNode,name=FSNamesystemState`, { signal: AbortSignal.timeout(5000) });
      const bean = ((await r.json()) as { beans: { NumLiveDataNodes?: number; FSState?: string }[] }).beans[0];
      last = JSON.stringify({ live: bean?.NumLiveDataNodes, state: bean?.FSState });
      if (bean && (bean.NumLiveDataNodes ?? 0) >= n && bean.FSState === "Operational") {
        const safe = await fetch(`http://127.0.0.1:${httpPort}/jmx?qry=Hadoop:service=NameNode,name=NameNodeInfo`, { signal: AbortSignal.timeout(5000) });
        const info = ((await safe.json()) as { beans: { Safemode?: string }[] }).beans[0];
        if (info && !info.Safemode) return;
        last += ` safemode: ${info?.Safemode}`;
      }
    } catch (e) {
      last = (e as Error).message;
    }
    if (!nameNode.running) throw new HdfsShellError(`the NameNode exited:\n${nameNode.tail(40)}`);
    if (Date.now() - started > timeoutMs) throw new HdfsShellError(`HDFS: ${n} live DataNodes not reached within ${timeoutMs} ms (${last}):\n${nameNode.tail(40)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * The daemons' HTTP servers look up `webapps/<name>` on the classpath; Maven's jars leave these
 * out (the binary distribution has them as directories). WebHDFS and JMX are servlets the
 * daemons add themselves, so empty web apps are enough.
 */
function webapps(classpathDir: string): void {
  for (const app of ["hdfs", "datanode", "static", "secondary", "journal"]) {
    const dir = path.join(classpathDir, "webapps", app, "WEB-INF");
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, "web.xml"), '<?xml version="1.0"?>\n<web-app xmlns="http://java.sun.com/xml/ns/javaee" version="3.0"/>\n');
  }
}

async function checked(p: Promise<ShellResult>, what: string): Promise<ShellResult> {
  const r = await p;
  if (r.code !== 0) throw new HdfsShellError(`hdfs dfs ${what}: exit ${r.code}: ${tailOf(r.stderr, 20)}`);
  return r;
}

function tailOf(text: string, lines: number): string {
  return text.split("\n").slice(-lines).join("\n");
}

/** One short-lived java process (format, FsShell, DFSAdmin), killed after timeoutMs. */
function runJava(
  cp: string,
  mainClass: string,
  args: string[],
  user: string | undefined,
  cwd: string,
  jvmArgs: string[],
  timeoutMs: number,
  binary = false,
): Promise<ShellResult & { bytes?: Buffer }> {
  return new Promise((resolve) => {
    const env = { ...process.env, ...(user ? { HADOOP_USER_NAME: user } : {}) };
    const child = spawn("java", [...jvmArgs, "-cp", cp, mainClass, ...args], { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    const out: Buffer[] = [];
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => out.push(d));
    child.stderr.on("data", (d: Buffer) => (stderr = (stderr + d).slice(-200_000)));
    const timer = setTimeout(() => {
      stderr += `\n(killed after ${timeoutMs} ms)`;
      child.kill("SIGKILL");
    }, timeoutMs);
    child.on("close", (code) => {
      clearTimeout(timer);
      const bytes = Buffer.concat(out);
      resolve({ code, stdout: binary ? "" : bytes.toString("utf8"), stderr, ...(binary ? { bytes } : {}) });
    });
    child.on("error", (e) => {
      clearTimeout(timer);
      resolve({ code: -1, stdout: "", stderr: `${stderr}\n${e.message}` });
    });
  });
}
