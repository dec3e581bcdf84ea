import { describe, expect, test } from "bun:test";
import { runCli } from "../support/helpers.ts";

describe("flume describe", () => {
  test("lists every type by kind", () => {
    const r = runCli(["describe"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Sources:\n/);
    expect(r.stdout).toMatch(/\nChannels:\n( {2}.*\n)* {2}memory +Events in an in-memory queue/);
    expect(r.stdout).toContain("Sink processors (processor.type):");
    expect(r.stdout).toMatch(/Config filters \(configfilters\.<name>\.type\):\n {2}env +.*\n {2}external /);
  });

  test("--kind limits the list", () => {
    const r = runCli(["describe", "--kind", "channel"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toStartWith("Channels:\n");
    expect(r.stdout).not.toContain("Sources:");
  });

  test("a type shows its properties, types, defaults, docs and aliases; Flume class names work", () => {
    for (const name of ["memory", "MEMORY", "org.apache.flume.channel.MemoryChannel"]) {
      const r = runCli(["describe", name]);
      expect(r.code).toBe(0);
      expect(r.stdout).toStartWith("channel memory\n");
      expect(r.stdout).toContain("aliases: org.apache.flume.channel.MemoryChannel");
      expect(r.stdout).toMatch(/\n {2}capacity +int +100 +Maximum number of events/);
      expect(r.stdout).toMatch(/\n {2}transactionCapacity +int +100 /);
      expect(r.stdout).toMatch(/\n {2}byteCapacityBufferPercentage +int +20 /);
      expect(r.stdout).toMatch(/\n {2}keep-alive +int +3 /);
    }
  });

  test("key groups and enum values are shown", () => {
    const r = runCli(["describe", "multiplexing"]);
    expect(r.stdout).toContain("mapping.*");
    const lb = runCli(["describe", "load_balance"]);
    expect(lb.stdout).toMatch(/selector +round_robin\|random +round_robin/);
  });

  test("an unknown type exits 2 with a suggestion", () => {
    const r = runCli(["describe", "memroy"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('unknown component type "memroy" (did you mean "memory"?)');
  });

  test("a Flume type Flume TS does not implement exits 2 saying so, with what to use instead", () => {
    const r = runCli(["describe", "hbase"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("Flume's `hbase` sink is not implemented by Flume TS; instead, ");
    expect(r.stderr).not.toContain("did you mean");
  });

  test("hdfs: Flume 1.11's properties with their defaults, the kerberos keys, serializer.*", () => {
    const r = runCli(["describe", "org.apache.flume.sink.hdfs.HDFSEventSink"]);
    expect(r.code).toBe(0);
    for (const [key, def] of [["hdfs.path", "(required)"], ["hdfs.filePrefix", "FlumeData"], ["hdfs.inUseSuffix", ".tmp"], ["hdfs.rollInterval", "30"], ["hdfs.rollSize", "1024"], ["hdfs.rollCount", "10"], ["hdfs.batchSize", "100"], ["hdfs.fileType", "SequenceFile"], ["hdfs.writeFormat", "Writable"], ["hdfs.maxOpenFiles", "5000"], ["hdfs.callTimeout", "30000"], ["hdfs.retryInterval", "180"], ["serializer", "TEXT"]]) {
      expect(r.stdout).toMatch(new RegExp(`\\n  ${key.replace(/\./g, "\\.")} +\\S+ +${def.replace(/[.()]/g, "\\$&")} `));
    }
    for (const key of ["hdfs.fileSuffix", "hdfs.inUsePrefix", "hdfs.emptyInUseSuffix", "hdfs.idleTimeout", "hdfs.codeC", "hdfs.minBlockReplicas", "hdfs.round", "hdfs.roundValue", "hdfs.roundUnit", "hdfs.timeZone", "hdfs.useLocalTimeStamp", "hdfs.closeTries", "hdfs.threadsPoolSize", "hdfs.rollTimerPoolSize", "hdfs.kerberosPrincipal", "hdfs.kerberosKeytab", "hdfs.proxyUser"]) {
      expect(r.stdout).toContain(`\n  ${key} `);
    }
    expect(r.stdout).toContain("serializer.*");
  });

  test("thrift: the source's and the sink's properties, the shared TLS ones included", () => {
    const r = runCli(["describe", "thrift"]);
    expect(r.code).toBe(0);
    for (const key of ["bind", "port", "threads", "protocol", "ssl", "keystore", "keystore-password", "truststore", "client-auth", "exclude-protocols", "kerberos", "agent-principal", "max-frame-size"]) {
      expect(r.stdout).toMatch(new RegExp(`^source thrift[\\s\\S]*\\n  ${key} `, "m"));
    }
    for (const key of ["hostname", "batch-size", "connect-timeout", "request-timeout", "reset-connection-interval", "truststore", "trust-all-certs", "keystore-key", "client-principal", "server-principal"]) {
      expect(r.stdout).toMatch(new RegExp(`^sink thrift[\\s\\S]*\\n  ${key} `, "m"));
    }
    expect(r.stdout).toContain("also connection-reset-interval");
  });
});
