import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import type { ComponentDefinition } from "../../src/components/component.ts";
import { definition as staticInterceptor } from "../../src/components/interceptors/static.ts";
import { definition as timestampInterceptor } from "../../src/components/interceptors/timestamp.ts";
import * as registry from "../../src/components/registry.ts";
import type { Problem } from "../../src/config/problems.ts";
import type { ComponentKind } from "../../src/config/schema.ts";
import { type ComponentRegistry, validateConfigText, validateEveryAgent } from "../../src/config/validate.ts";

/** The real registry, plus interceptors in case they are not registered yet. */
const extras = [staticInterceptor, timestampInterceptor] as ComponentDefinition<unknown>[];
const reg: ComponentRegistry = {
  lookupComponent(kind: ComponentKind, type: string) {
    return registry.lookupComponent(kind, type) ?? extras.find((d) => d.schema.kind === kind && [d.schema.type, ...(d.schema.aliases ?? [])].some((n) => n.toLowerCase() === type.toLowerCase()));
  },
  allComponents() {
    const all = registry.allComponents();
    return [...all, ...extras.filter((e) => !all.includes(e))];
  },
};

const conf = (lines: string[]) => lines.join("\n") + "\n";

function check(lines: string[], agentName?: string): Problem[] {
  return validateConfigText(conf(lines), "flume.conf", { agentName, env: {} }, reg).problems;
}

function brief(problems: Problem[]) {
  return problems.map((p) => `${p.line} ${p.severity} ${p.code} ${p.component}${p.key ? ` ${p.key}` : ""}`);
}

/** A valid base agent: seq -> memory -> null. Lines 1-9. */
const BASE = [
  "a1.sources = r1", // 1
  "a1.channels = c1", // 2
  "a1.sinks = k1", // 3
  "a1.sources.r1.type = seq", // 4
  "a1.sources.r1.channels = c1", // 5
  "a1.channels.c1.type = memory", // 6
  "a1.channels.c1.capacity = 1000", // 7
  "a1.sinks.k1.type = null", // 8
  "a1.sinks.k1.channel = c1", // 9
];

describe("validateAgentConfig", () => {
  test("a correct agent has no problems", () => {
    expect(check(BASE)).toEqual([]);
  });

  test("a Flume type Flume TS does not implement says so and what to use instead, not a did-you-mean", () => {
    const hive = check(BASE.map((l) => l.replace("a1.sinks.k1.type = null", "a1.sinks.k1.type = hive")));
    expect(brief(hive)).toEqual(["8 error unsupported-type sink k1 type"]);
    expect(hive[0].message).toBe("Flume's `hive` sink is not implemented by Flume TS");
    expect(hive[0].hint).toMatch(/^instead, .*avro sink/);
    const jdbc = check(BASE.map((l) => l.replace("type = memory", "type = org.apache.flume.channel.jdbc.JdbcChannel")));
    expect(jdbc[0].message).toBe("Flume's `jdbc` channel is not implemented by Flume TS");
    expect(jdbc[0].hint).toMatch(/file channel/);
    for (const [kind, type] of [["sink", "hbase"], ["sink", "hbase2"], ["sink", "asynchbase"], ["sink", "elasticsearch"], ["sink", "morphline_solr"], ["sink", "kite"], ["source", "jms"], ["channel", "jdbc"], ["sink", "irc"]]) {
      const lines = kind === "sink" ? BASE.map((l) => l.replace("a1.sinks.k1.type = null", `a1.sinks.k1.type = ${type}`)) : kind === "source" ? BASE.map((l) => l.replace("a1.sources.r1.type = seq", `a1.sources.r1.type = ${type}`)) : BASE.map((l) => l.replace("type = memory", `type = ${type}`));
      const p = check(lines);
      expect({ type, code: p[0]?.code, message: p[0]?.message }).toEqual({ type, code: "unsupported-type", message: `Flume's \`${type}\` ${kind} is not implemented by Flume TS` });
    }
  });

  test("unknown type, with did-you-mean", () => {
    const p = check(BASE.map((l) => l.replace("type = memory", "type = memroy")));
    expect(brief(p)).toEqual(["6 error unknown-type channel c1 type"]);
    expect(p[0].message).toBe('unknown channel type "memroy"');
    expect(p[0].hint).toBe('did you mean "memory"?');
    expect(p[0].ref).toEqual({ kind: "channel", name: "c1" });
    const unresolved = check([...BASE, "a1.sinks.k1.batchSize = ${env:B}"]);
    expect(unresolved[0].ref).toEqual({ kind: "sink", name: "k1" });
  });

  test("types are case-insensitive and Flume's class names are accepted", () => {
    const lines = BASE.map((l) => l.replace("type = memory", "type = MEMORY").replace("type = null", "type = org.apache.flume.sink.NullSink"));
    expect(check(lines)).toEqual([]);
  });

  test("missing type", () => {
    const p = check(BASE.filter((l) => !l.includes("k1.type")));
    expect(brief(p)).toEqual(["8 error missing-type sink k1 type"]);
    expect(p[0].hint).toContain("a1.sinks.k1.type = ...");
  });

  test("unknown property is a warning with did-you-mean", () => {
    const p = check([...BASE, "a1.channels.c1.transactioncapacity = 10", "a1.channels.c1.zzzzzzzz = 1"]);
    expect(brief(p)).toEqual(["10 warning unknown-property channel c1 transactioncapacity", "11 warning unknown-property channel c1 zzzzzzzz"]);
    expect(p[0].hint).toBe("did you mean transactionCapacity?");
    expect(p[1].hint).toContain("memory reads: capacity, transactionCapacity");
  });

  test("a wiring key misspelled on a component: did-you-mean points to it", () => {
    const p = check(BASE.map((l) => l.replace("k1.channel = c1", "k1.channels = c1")));
    expect(brief(p)).toEqual(["6 warning channel-unused channel c1", "8 error missing-channel sink k1 channel", "9 warning unknown-property sink k1 channels"]);
    expect(p[2].hint).toBe("did you mean channel?");
  });

  test("a value of the wrong type or out of range", () => {
    const p = check([...BASE, "a1.channels.c1.keep-alive = soon", "a1.channels.c1.byteCapacityBufferPercentage = 120"]);
    expect(brief(p)).toEqual(["10 error bad-value channel c1 keep-alive", "11 error bad-value channel c1 byteCapacityBufferPercentage"]);
    expect(p[0].message).toBe('expected a whole number, got "soon"');
    expect(p[1].message).toBe("must be at most 100, got 120");
    expect(p[0].hint).toBe("a whole number, at least 0; default 3");
  });

  test("an empty value lets the default apply: a warning when the default matters", () => {
    const p = check([...BASE, "a1.channels.c1.keep-alive ="]);
    expect(brief(p)).toEqual(["10 warning bad-value channel c1 keep-alive"]);
    expect(p[0].message).toBe("is empty, so Flume ignores it and the default 3 applies");
  });

  test("a source without channels and a sink without a channel", () => {
    const p = check(BASE.filter((l) => !l.includes("r1.channels") && !l.includes("k1.channel")));
    expect(brief(p)).toEqual([
      "4 error missing-channels source r1 channels",
      "5 warning channel-unused channel c1",
      "5 warning channel-unused channel c1",
      "7 error missing-channel sink k1 channel",
    ]);
  });

  test("references to undefined channels, with suggestions", () => {
    const p = check([...BASE.map((l) => l.replace("r1.channels = c1", "r1.channels = c1 cc1").replace("k1.channel = c1", "k1.channel = c2"))]);
    expect(brief(p)).toEqual(["5 error undefined-channel source r1 channels", "6 warning channel-unused channel c1", "9 error undefined-channel sink k1 channel"]);
    expect(p[0].message).toBe("channel cc1 is not defined");
    expect(p[0].hint).toBe("did you mean c1?");
  });

  test("listed but not configured, configured but not listed", () => {
    const p = check([...BASE.map((l) => l.replace("a1.sinks = k1", "a1.sinks = k1 k2")), "a1.sinks.k3.type = logger", "a1.sinks.k3.channel = c1"]);
    expect(brief(p)).toEqual(["3 error listed-not-configured sink k2", "10 warning configured-not-listed sink k3"]);
    expect(p[0].hint).toBe("did you mean k3, which is configured?");
    expect(p[1].hint).toBe("did you mean k2, which is listed? otherwise add it: a1.sinks = k1 k2 k3");
  });

  test("a channel that is configured but not listed cannot be used", () => {
    const p = check([...BASE.map((l) => l.replace("r1.channels = c1", "r1.channels = c1 c9")), "a1.channels.c9.type = memory"]);
    expect(brief(p)).toEqual(["5 error undefined-channel source r1 channels", "10 warning configured-not-listed channel c9"]);
    expect(p[0].message).toBe("channel c9 is configured but not listed in a1.channels");
  });

  test("a sink in two sink groups; a group naming an undefined sink", () => {
    const p = check([
      ...BASE.map((l) => l.replace("a1.sinks = k1", "a1.sinks = k1 k2")),
      "a1.sinks.k2.type = null", // 10
      "a1.sinks.k2.channel = c1", // 11
      "a1.sinkgroups = g1 g2", // 12
      "a1.sinkgroups.g1.sinks = k1 k2", // 13
      "a1.sinkgroups.g2.sinks = k2 k7", // 14
      "a1.sinkgroups.g1.processor.type = failover", // 15
      "a1.sinkgroups.g2.processor.type = failover", // 16
    ]);
    expect(brief(p)).toEqual(["14 error sink-in-two-groups sinkgroup g2 sinks", "14 error undefined-sink sinkgroup g2 sinks"].sort());
    expect(p.find((x) => x.code === "sink-in-two-groups")!.message).toBe("sink k2 is already in sink group g1; a sink can belong to one group only");
  });

  test("sink processor settings are checked against the processor's schema", () => {
    const p = check([
      ...BASE.map((l) => l.replace("a1.sinks = k1", "a1.sinks = k1 k2")),
      "a1.sinks.k2.type = null", // 10
      "a1.sinks.k2.channel = c1", // 11
      "a1.sinkgroups = g1", // 12
      "a1.sinkgroups.g1.sinks = k1 k2", // 13
      "a1.sinkgroups.g1.processor.type = load_balance", // 14
      "a1.sinkgroups.g1.processor.selector = randm", // 15
      "a1.sinkgroups.g1.processor.backof = true", // 16
      "a1.sinkgroups.g2.processor.type = failover", // 17 (unlisted group)
    ]);
    expect(brief(p)).toEqual([
      "15 error bad-value sinkgroup g1 processor.selector",
      "16 warning unknown-property sinkgroup g1 processor.backof",
      "17 warning configured-not-listed sinkgroup g2",
    ]);
    expect(p[1].hint).toBe("did you mean processor.backoff?");
  });

  test("unknown processor and selector types", () => {
    const p = check([
      ...BASE,
      "a1.sources.r1.selector.type = multiplexin", // 10
      "a1.sinks = k1",
      "a1.sinkgroups = g1", // 12
      "a1.sinkgroups.g1.sinks = k1", // 13
      "a1.sinkgroups.g1.processor.type = failovr", // 14
    ]);
    expect(brief(p)).toContain("10 error unknown-type source r1 selector.type");
    expect(brief(p)).toContain("14 error unknown-type sinkgroup g1 processor.type");
    expect(p.find((x) => x.key === "selector.type")!.hint).toBe('did you mean "multiplexing"?');
  });

  test("multiplexing selector channels must be the source's channels", () => {
    const p = check([
      ...BASE,
      "a1.sources.r1.selector.type = multiplexing", // 10
      "a1.sources.r1.selector.header = state", // 11
      "a1.sources.r1.selector.mapping.CZ = c1 c2", // 12
      "a1.sources.r1.selector.default = c1", // 13
    ]);
    expect(brief(p)).toEqual(["12 error undefined-channel source r1 selector.mapping.CZ"]);
    expect(p[0].hint).toBe("add c2 to a1.sources.r1.channels");
  });

  test("a replicating selector's optional channels must be the source's too", () => {
    const p = check([...BASE, "a1.sources.r1.selector.optional = c1 c9"]);
    expect(brief(p)).toEqual(["10 error undefined-channel source r1 selector.optional"]);
    expect(p[0].message).toBe("channel c9 is not one of the source's channels (c1)");
  });

  test("regex_extractor's serializers: each setting read by its spec at its line, a missing name at the interceptor", () => {
    const p = check([
      ...BASE,
      "a1.sources.r1.interceptors = i1", // 10
      "a1.sources.r1.interceptors.i1.type = regex_extractor", // 11
      "a1.sources.r1.interceptors.i1.regex = (\\d+) (\\w+) (\\w+)", // 12
      "a1.sources.r1.interceptors.i1.serializers = s1 s2 s3", // 13
      "a1.sources.r1.interceptors.i1.serializers.s1.name = n", // 14
      "a1.sources.r1.interceptors.i1.serializers.s1.type = millis", // 15
      "a1.sources.r1.interceptors.i1.serializers.s2.name = w", // 16
      "a1.sources.r1.interceptors.i1.serializers.s2.type = org.example.Upper", // 17
      "a1.sources.r1.interceptors.i1.serializers.s2.patern = x", // 18
    ]);
    expect(brief(p)).toEqual([
      "11 error bad-value source r1 interceptors.i1.serializers.s3.name",
      "14 error bad-value source r1 interceptors.i1.serializers.s1.pattern",
      "17 error bad-value source r1 interceptors.i1.serializers.s2.type",
      "18 warning unknown-property source r1 interceptors.i1.serializers.s2.patern",
    ]);
    expect(p[2].message).toMatch(/^expected one of DEFAULT, .*millis, got "org.example.Upper"$/);
    expect(p[3].hint).toBe("serializers.<id> takes: name, type, pattern");
  });

  test("multiport_syslogtcp's charset.port.<port>: a charset it cannot read and a key that is no port, at their lines", () => {
    const p = check([
      ...BASE.map((l) => l.replace("a1.sources.r1.type = seq", "a1.sources.r1.type = multiport_syslogtcp")),
      "a1.sources.r1.ports = 5140 5141", // 10
      "a1.sources.r1.charset.port.5140 = EBCDIC", // 11
      "a1.sources.r1.charset.port.x = UTF-8", // 12
      "a1.sources.r1.charset.port.5141 = iso-8859-1", // 13
    ]);
    expect(brief(p)).toEqual(["11 error bad-value source r1 charset.port.5140", "12 error bad-value source r1 charset.port.x"]);
  });

  test("the spooldir source's deserializer is a part found in the registry: a did-you-mean at its line, its settings checked against its schema", () => {
    const spool = BASE.map((l) => l.replace("a1.sources.r1.type = seq", "a1.sources.r1.type = spooldir")).concat("a1.sources.r1.spoolDir = /var/spool"); // 10
    const typo = check([...spool, "a1.sources.r1.deserializer = BLBO"]);
    expect(brief(typo)).toEqual(["11 error unknown-type source r1 deserializer"]);
    expect(typo[0].hint).toBe('did you mean "BLOB"?');
    const settings = check([...spool, "a1.sources.r1.deserializer.maxLineLength = 0", "a1.sources.r1.deserializer.outputCharset = EBCDIC", "a1.sources.r1.deserializer.maxBlobLength = 5"]);
    expect(brief(settings)).toEqual(["11 error bad-value source r1 deserializer.maxLineLength", "12 error bad-value source r1 deserializer.outputCharset", "13 warning unknown-property source r1 deserializer.maxBlobLength"]);
    expect(settings[1].message).toBe('unsupported charset "EBCDIC" (UTF-8, ISO-8859-1 or US-ASCII)');
    expect(check([...spool, "a1.sources.r1.deserializer = org.apache.flume.sink.solr.morphline.BlobDeserializer$Builder", "a1.sources.r1.deserializer.maxBlobLength = 5"])).toEqual([]);
  });

  test("the http source's handler is a part found in the registry: a did-you-mean at its line, its settings checked against its schema", () => {
    const http = BASE.map((l) => l.replace("a1.sources.r1.type = seq", "a1.sources.r1.type = http")).concat("a1.sources.r1.port = 8080"); // 10
    const typo = check([...http, "a1.sources.r1.handler = BLOBB"]);
    expect(brief(typo)).toEqual(["11 error unknown-type source r1 handler"]);
    expect(typo[0].hint).toBe('did you mean "BLOB"?');
    const settings = check([...http, "a1.sources.r1.handler = org.apache.flume.source.http.BLOBHandler", "a1.sources.r1.handler.maxBlobLength = 0", "a1.sources.r1.handler.mandatoryParameter = id"]);
    expect(brief(settings)).toEqual(["12 error bad-value source r1 handler.maxBlobLength", "13 warning unknown-property source r1 handler.mandatoryParameter"]);
    expect(settings[1].hint).toBe("did you mean handler.mandatoryParameters?");
  });

  test("interceptors: unknown type, bad values, unlisted ones", () => {
    const p = check([
      ...BASE,
      "a1.sources.r1.interceptors = i1 i2 i3", // 10
      "a1.sources.r1.interceptors.i1.type = timestmp", // 11
      "a1.sources.r1.interceptors.i2.type = static", // 12
      "a1.sources.r1.interceptors.i2.preserveExisting = maybe", // 13
      "a1.sources.r1.interceptors.i4.type = static", // 14
    ]);
    expect(brief(p)).toEqual([
      "10 error missing-type source r1 interceptors.i3.type",
      "11 error unknown-type source r1 interceptors.i1.type",
      "13 error bad-value source r1 interceptors.i2.preserveExisting",
      "14 warning configured-not-listed source r1 interceptors.i4",
    ]);
    expect(p[1].hint).toBe('did you mean "timestamp"?');
  });

  test("Flume's interceptor class names are accepted", () => {
    expect(check([...BASE, "a1.sources.r1.interceptors = i1", "a1.sources.r1.interceptors.i1.type = org.apache.flume.interceptor.TimestampInterceptor$Builder"])).toEqual([]);
  });

  test("source and sink batch sizes larger than the channel's transactionCapacity", () => {
    const p = check([
      ...BASE,
      "a1.channels.c1.transactionCapacity = 50", // 10
      "a1.sources.r1.batchSize = 51", // 11
    ]);
    // null's batchSize defaults to 100: reported at the sink's first line.
    expect(brief(p)).toEqual(["8 error batch-exceeds-transaction sink k1 batchSize", "11 error batch-exceeds-transaction source r1 batchSize"]);
    expect(p[0].message).toBe("batchSize 100 (the default) is larger than the transactionCapacity 50 (line 10) of channel c1 it reads from, so no batch could ever commit");
    expect(p[1].hint).toBe("lower batchSize to at most 50 or raise a1.channels.c1.transactionCapacity");
  });

  test("transactionCapacity larger than capacity", () => {
    const p = check([...BASE.filter((l) => !l.includes("capacity")), "a1.channels.c1.capacity = 10", "a1.channels.c1.transactionCapacity = 20"]);
    expect(brief(p)).toEqual(["7 error batch-exceeds-transaction sink k1 batchSize", "10 error transaction-exceeds-capacity channel c1 transactionCapacity"]);
    expect(p.filter((x) => x.key === "transactionCapacity")).toHaveLength(1);
    const q = check([...BASE.filter((l) => !l.includes("capacity")), "a1.channels.c1.capacity = 10"]);
    expect(q.find((x) => x.code === "transaction-exceeds-capacity")!.message).toBe("transactionCapacity 100 (the default) is larger than capacity 10");
    expect(q.find((x) => x.code === "transaction-exceeds-capacity")!.line).toBe(9);
  });

  test("a channel nothing writes to or reads from is a warning", () => {
    const p = check([...BASE.map((l) => l.replace("a1.channels = c1", "a1.channels = c1 c2")), "a1.channels.c2.type = memory"]);
    expect(brief(p)).toEqual(["10 warning channel-unused channel c2", "10 warning channel-unused channel c2"]);
    expect(p.map((x) => x.message)).toEqual(["no source writes to this channel", "no sink reads from this channel, so it fills up and then blocks its sources"]);
  });

  test("an unresolved variable is reported with the other problems", () => {
    const p = check([...BASE, "a1.channels.c1.keep-alive = ${env:KEEP}", "a1.sinks.k1.batchSize = 0"]);
    // The unresolved value is not reported a second time as a bad number.
    expect(brief(p)).toEqual(["10 error unresolved-variable channel c1 keep-alive", "11 error bad-value sink k1 batchSize"]);
  });

  test("an agent without channels, or without sources and sinks", () => {
    expect(brief(check(["a1.channels = c1", "a1.channels.c1.type = memory"]))).toEqual(["1 error no-sources-or-sinks a1 sources", "2 warning channel-unused channel c1", "2 warning channel-unused channel c1"]);
    expect(brief(check(["a1.sinks = k1", "a1.sinks.k1.type = null", "a1.sinks.k1.channel = c1"]))).toEqual(["1 error no-channels a1 channels", "3 error undefined-channel sink k1 channel"]);
  });

  test("every problem at once, sorted by line", () => {
    const p = check([
      "a1.sources = r1 r2", // 1
      "a1.channels = c1", // 2
      "a1.sinks = k1", // 3
      "a1.sources.r1.type = seqq", // 4
      "a1.sources.r1.channels = c1", // 5
      "a1.channels.c1.type = memory", // 6
      "a1.channels.c1.capacity = ten", // 7
      "a1.sinks.k1.type = null", // 8
      "a1.sinks.k1.chanel = c1", // 9
    ]);
    expect(brief(p)).toEqual([
      "1 error listed-not-configured source r2",
      "4 error unknown-type source r1 type",
      "6 warning channel-unused channel c1",
      "7 error bad-value channel c1 capacity",
      "8 error missing-channel sink k1 channel",
      "9 warning unknown-property sink k1 chanel",
    ]);
    expect(p[4].hint).toBe("add a1.sinks.k1.channel = c1");
  });

  test("every batch-size property of every component declares the batchSize role the batch check relies on", () => {
    const untagged = registry
      .allComponents()
      .flatMap((d) => d.schema.props.filter((p) => /batchsize$/.test(p.key.toLowerCase().replace(/[-_.]/g, "")) && !p.roles?.includes("batchSize")).map((p) => `${d.schema.kind} ${d.schema.type}: ${p.key}`));
    expect(untagged).toEqual([]);
  });
});

describe("robustness", () => {
  const word = fc.constantFrom("a1", "sources", "channels", "sinks", "sinkgroups", "configfilters", "r1", "c1", "k1", "g1", "f1", "type", "channel", "selector", "interceptors", "i1", "processor", "mapping", "batchSize", "capacity", "transactionCapacity", "__proto__", "", "x");
  const value = fc.oneof(
    fc.constantFrom("memory", "seq", "null", "logger", "c1", "c1 c2", "k1 k1", "10", "-1", "0", "true", "multiplexing", "failover", "default", "timestamp", "env", "external", "${env:X}", "${a1.x}", "${f1['k']}", "$${y}", "${", ""),
    fc.string({ maxLength: 8 }),
  );
  const line = fc.tuple(fc.array(word, { minLength: 1, maxLength: 5 }), fc.constantFrom(" = ", ":", " ", "="), value).map(([k, sep, v]) => k.join(".") + sep + v);

  test("any file of Flume-like keys validates without throwing, every problem located", () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(line, fc.string({ maxLength: 20 })), { maxLength: 30 }), (lines) => {
        const text = lines.join("\n");
        const total = text.split(/\r\n|\r|\n/).length;
        const r = validateConfigText(text, "fuzz.conf", { agentName: "a1", env: {} }, reg);
        for (const p of r.problems) {
          expect(p.file).toBe("fuzz.conf");
          // A line of the file, or 0 for a problem of the whole file.
          expect(Number.isInteger(p.line)).toBe(true);
          expect(p.line).toBeWithin(0, total + 1);
          expect(typeof p.message).toBe("string");
        }
      }),
      { numRuns: 400 },
    );
  });
});

describe("problem reports name each problem once, relative to its component", () => {
  test("an unresolved variable is one error, not also a bad value; a duplicate key's key is relative", () => {
    const text = "a1.sources = r1\na1.channels = c1\na1.sources.r1.type = seq\na1.sources.r1.channels = c1\na1.channels.c1.type = memory\na1.channels.c1.capacity = ${env:FLUME_TS_SURELY_UNSET}\na1.channels.c1.keep-alive = 1\na1.channels.c1.keep-alive = 2\n";
    const r = validateConfigText(text, "x.conf", { env: {} }, registry);
    const capacity = r.problems.filter((p) => p.key === "capacity");
    expect(capacity.map((p) => p.code)).toEqual(["unresolved-variable"]);
    const dup = r.problems.find((p) => p.code === "duplicate-key");
    expect(dup).toMatchObject({ line: 8, component: "channel c1", key: "keep-alive" });
  });
});

describe("every agent of a file (a tier)", () => {
  const tier = [
    "edge.sources = r1",
    "edge.channels = c1",
    "edge.sinks = k1",
    "edge.sources.r1.type = seq",
    "edge.sources.r1.channels = c1",
    "edge.channels.c1.type = memory",
    "edge.sinks.k1.type = avro",
    "edge.sinks.k1.channel = c1",
    "edge.sinks.k1.hostname = 127.0.0.1",
    "edge.sinks.k1.port = 4545",
    "collector.sources = r1",
    "collector.channels = c1",
    "collector.sinks = k1",
    "collector.sources.r1.type = avro",
    "collector.sources.r1.bind = 0.0.0.0",
    "collector.sources.r1.port = 99999",
    "collector.sources.r1.channels = c1",
    "collector.channels.c1.type = memory",
    "collector.sinks.k1.type = logger",
    "collector.sinks.k1.channel = c1",
    "colector.sinks.k1.type = null",
    "",
  ].join("\n");

  test("each agent with a channel list gets its own model and problems, as flume run -n <agent> would", () => {
    const results = validateEveryAgent(tier, "tier.conf", { env: {} }, registry);
    expect(results.map((r) => r.config?.agent)).toEqual(["edge", "collector"]);
    const [edge, collector] = results;
    expect(edge.problems.filter((p) => p.severity === "error")).toEqual([]);
    expect([...(edge.model?.sinks.keys() ?? [])]).toEqual(["k1"]);
    expect(collector.problems.filter((p) => p.severity === "error").map((p) => `${p.line} ${p.component} ${p.key}`)).toEqual(["16 source r1 port"]);
    // The same problems as the one-agent parse of that agent.
    const alone = validateConfigText(tier, "tier.conf", { agentName: "collector", env: {} }, registry);
    expect(collector.problems).toEqual(alone.problems);
    // A prefix without channels is a typo the single-agent parse warns about, not an agent.
    expect(edge.problems.some((p) => p.code === "not-in-agent" && p.component === "colector")).toBe(true);
  });

  test("a file without agents gives the one-agent parse's error", () => {
    const [only] = validateEveryAgent("x = 1\n", "x.conf", { env: {} }, registry);
    expect(only.problems.map((p) => p.code)).toContain("no-agent");
  });
});
