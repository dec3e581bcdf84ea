import { describe, expect, test } from "bun:test";
import {
  fingerprint,
  interceptorEntries,
  ownProps,
  parseFlumeConfigMap,
  rawValues,
  selectorProps,
  sinkChannel,
  sinkGroupSinks,
  sinkProcessorProps,
  sourceChannels,
  unlistedInterceptors,
} from "../../src/config/flume-config.ts";
import { brief, conf, parse } from "../support/config.ts";

describe("Flume's configuration grammar", () => {
  const classic = conf([
    "# example.conf", // 1
    "a1.sources = r1", // 2
    "a1.sinks = k1", // 3
    "a1.channels = c1", // 4
    "a1.sources.r1.type = netcat", // 5
    "a1.sources.r1.bind = localhost", // 6
    "a1.sources.r1.port = 44444", // 7
    "a1.sinks.k1.type = logger", // 8
    "a1.channels.c1.type = memory", // 9
    "a1.channels.c1.capacity = 1000", // 10
    "a1.sources.r1.channels = c1", // 11
    "a1.sinks.k1.channel = c1", // 12
  ]);

  test("components with their type, props and lines", () => {
    const r = parse(classic);
    expect(r.agents).toEqual(["a1"]);
    expect(r.problems).toEqual([]);
    const c = r.config!;
    expect(c.agent).toBe("a1");
    expect(c.file).toBe("flume.conf");
    expect(c.line).toBe(2);
    expect(c.listed.sources).toEqual({ value: "r1", file: "flume.conf", line: 2 });
    const r1 = c.sources.get("r1")!;
    expect(r1.kind).toBe("source");
    expect(r1.type).toEqual({ value: "netcat", file: "flume.conf", line: 5 });
    expect(r1.line).toBe(5);
    expect(rawValues(r1.props)).toEqual({ bind: "localhost", port: "44444", channels: "c1" });
    expect(r1.props.channels.line).toBe(11);
    expect(sourceChannels(r1)).toEqual(["c1"]);
    expect(rawValues(ownProps(r1))).toEqual({ bind: "localhost", port: "44444" });
    const k1 = c.sinks.get("k1")!;
    expect(sinkChannel(k1)).toBe("c1");
    expect(ownProps(k1)).toEqual({});
    expect(c.channels.get("c1")!.props.capacity).toEqual({ value: "1000", file: "flume.conf", line: 10 });
  });

  test("values are trimmed; empty values are kept apart (Flume ignores them)", () => {
    const r = parse(conf(["a1.channels = c1  ", "a1.channels.c1.type =   memory   ", "a1.channels.c1.capacity =", "a1.sources ="]));
    const c1 = r.config!.channels.get("c1")!;
    expect(c1.type?.value).toBe("memory");
    expect(c1.props.capacity).toBeUndefined();
    expect(c1.emptyProps.capacity).toEqual({ value: "", file: "flume.conf", line: 3 });
    expect(r.config!.listed.channels?.value).toBe("c1");
    expect(r.config!.listed.sources).toBeUndefined();
    expect(brief(r.problems)).toEqual([{ line: 4, severity: "warning", code: "empty-list", component: "a1", key: "sources" }]);
  });

  test("selector, interceptors and sink processor keys stay in props and are read through helpers", () => {
    const r = parse(
      conf([
        "a1.sources = r1", // 1
        "a1.sources.r1.type = seq", // 2
        "a1.sources.r1.channels = c1 c2", // 3
        "a1.sources.r1.selector.type = multiplexing", // 4
        "a1.sources.r1.selector.header = state", // 5
        "a1.sources.r1.selector.mapping.CZ = c1", // 6
        "a1.sources.r1.interceptors = i2 i1", // 7
        "a1.sources.r1.interceptors.i1.type = static", // 8
        "a1.sources.r1.interceptors.i1.key = dc", // 9
        "a1.sources.r1.interceptors.i2.type = timestamp", // 10
        "a1.sources.r1.interceptors.i3.type = host", // 11
        "a1.sinkgroups = g1", // 12
        "a1.sinkgroups.g1.sinks = k1 k2", // 13
        "a1.sinkgroups.g1.processor.type = failover", // 14
        "a1.sinkgroups.g1.processor.priority.k1 = 5", // 15
      ]),
    );
    const r1 = r.config!.sources.get("r1")!;
    const sel = selectorProps(r1);
    expect(sel.type).toEqual({ value: "multiplexing", file: "flume.conf", line: 4 });
    expect(rawValues(sel.props)).toEqual({ header: "state", "mapping.CZ": "c1" });
    expect(sel.prefix).toBe("selector.");
    expect(sel.line).toBe(4);
    const is = interceptorEntries(r1);
    expect(is.map((i) => [i.name, i.type?.value, rawValues(i.props), i.prefix])).toEqual([
      ["i2", "timestamp", {}, "interceptors.i2."],
      ["i1", "static", { key: "dc" }, "interceptors.i1."],
    ]);
    expect(unlistedInterceptors(r1)).toEqual(["i3"]);
    expect(Object.keys(ownProps(r1))).toEqual([]);
    const g1 = r.config!.sinkgroups.get("g1")!;
    expect(sinkGroupSinks(g1)).toEqual(["k1", "k2"]);
    const proc = sinkProcessorProps(g1);
    expect(proc.type?.value).toBe("failover");
    expect(rawValues(proc.props)).toEqual({ "priority.k1": "5" });
  });

  test("a source without a selector gets an empty selector part located at the source", () => {
    const r = parse(conf(["a1.sources = r1", "a1.sources.r1.type = seq"]));
    const sel = selectorProps(r.config!.sources.get("r1")!);
    expect(sel.type).toBeUndefined();
    expect(sel.line).toBe(2);
    expect(interceptorEntries(r.config!.sources.get("r1")!)).toEqual([]);
  });

  test("several agents per file: -n picks one, and keys of other agents are not mixed in", () => {
    const text = conf(["a1.channels = c1", "a1.channels.c1.type = memory", "a2.channels = c9", "a2.channels.c9.type = memory", "a2.channels.c9.capacity = 5"]);
    const r = parse(text, { agentName: "a2" });
    expect(r.agents).toEqual(["a1", "a2"]);
    expect([...r.config!.channels.keys()]).toEqual(["c9"]);
    expect(r.config!.line).toBe(3);
    expect(r.problems).toEqual([]);
  });

  test("another 'agent' without channels is most likely a typo of the agent name: a warning", () => {
    const r = parse(conf(["a1.channels = c1", "a1.channels.c1.type = memory", "al.channels.c1.capacity = 10"]), { agentName: "a1" });
    expect(r.agents).toEqual(["a1", "al"]);
    expect(brief(r.problems)).toEqual([{ line: 3, severity: "warning", code: "not-in-agent", component: "al", key: "al.channels.c1.capacity" }]);
    expect(r.problems[0].hint).toBe("did you mean a1.channels.c1.capacity?");
  });

  test("several agents and no name: a problem listing them, no config", () => {
    const r = parse(conf(["a1.channels = c1", "b7.channels = c1"]));
    expect(r.config).toBeUndefined();
    expect(r.problems).toHaveLength(1);
    expect(r.problems[0].code).toBe("ambiguous-agent");
    expect(r.problems[0].message).toBe("the file configures several agents (a1, b7)");
    expect(r.problems[0].hint).toBe("pick one with -n, e.g. -n a1");
  });

  test("an unknown agent name: a problem with a suggestion", () => {
    const r = parse(conf(["agent1.channels = c1"]), { agentName: "agent2" });
    expect(r.config).toBeUndefined();
    expect(r.problems[0].code).toBe("unknown-agent");
    expect(r.problems[0].message).toBe("no agent named agent2 in this file; it configures agent1");
    expect(r.problems[0].hint).toBe("did you mean -n agent1?");
  });

  test("a file with no agent", () => {
    const r = parse("# nothing\nfoo = bar\n");
    expect(r.agents).toEqual([]);
    expect(r.problems.map((p) => p.code)).toEqual(["no-agent"]);
  });

  test("keys outside Flume's grammar are errors with a suggestion", () => {
    const r = parse(conf(["a1.channels = c1", "a1.channels.c1.type = memory", "a1.source.r1.type = seq", "a1.sources.r1 = x", "a1.foo = 1"]));
    expect(brief(r.problems)).toEqual([
      { line: 3, severity: "error", code: "invalid-key", component: "a1", key: "source.r1.type" },
      { line: 4, severity: "error", code: "invalid-key", component: "a1", key: "sources.r1" },
      { line: 5, severity: "error", code: "invalid-key", component: "a1", key: "foo" },
    ]);
    expect(r.problems[0].hint).toBe("did you mean a1.sources.r1.type?");
  });

  test("duplicate keys: the later wins, with a warning at its line", () => {
    const r = parse(conf(["a1.channels = c1", "a1.channels.c1.type = memory", "a1.channels.c1.capacity = 10", "a1.channels.c1.capacity = 20"]));
    expect(r.config!.channels.get("c1")!.props.capacity).toEqual({ value: "20", file: "flume.conf", line: 4 });
    expect(brief(r.problems)).toEqual([{ line: 4, severity: "warning", code: "duplicate-key", component: "channel c1", key: "capacity" }]);
    expect(r.problems[0].message).toContain("line 3");
  });

  test("a key of no agent is a warning unless a ${...} refers to it", () => {
    const r = parse(conf(["base = /var/flume", "unused = 1", "a1.channels = c1", "a1.channels.c1.type = file", "a1.channels.c1.checkpointDir = ${base}/cp"]));
    expect(r.config!.channels.get("c1")!.props.checkpointDir.value).toBe("/var/flume/cp");
    expect(brief(r.problems)).toEqual([{ line: 2, severity: "warning", code: "not-in-agent", component: "", key: "unused" }]);
  });

  test("a properties syntax error is reported with its line", () => {
    const r = parse(conf(["a1.channels = c1", "a1.channels.c1.type = \\uZZZZ"]));
    expect(brief(r.problems)).toEqual([{ line: 2, severity: "error", code: "syntax", component: "", key: "" }]);
  });
});

describe("keys that are names of Object.prototype members", () => {
  test("__proto__ and constructor are ordinary keys", () => {
    const r = parse(conf(["a1.channels = c1", "a1.channels.c1.type = memory", "a1.channels.c1.__proto__ = x", "a1.channels.c1.constructor = y"]));
    const c1 = r.config!.channels.get("c1")!;
    expect(Object.keys(c1.props)).toEqual(["__proto__", "constructor"]);
    expect(rawValues(c1.props).__proto__).toBe("x");
  });
});

describe("configuration from memory and reload fingerprints", () => {
  test("parseFlumeConfigMap takes key/values without a file", () => {
    const r = parseFlumeConfigMap({ "a1.channels": "c1", "a1.channels.c1.type": "memory", "a1.channels.c1.capacity": " ${env:CAP} " }, "<embedded>", { env: { CAP: "7" } });
    expect(r.problems).toEqual([]);
    const c1 = r.config!.channels.get("c1")!;
    expect(c1.props.capacity).toEqual({ value: "7", file: "<embedded>", line: 3 });
    const m = parseFlumeConfigMap(new Map([["x.channels", "c"]]), "<embedded>");
    expect(m.agents).toEqual(["x"]);
  });

  test("fingerprints ignore lines and key order, and change with any value", () => {
    const a = parse(conf(["a1.channels = c1", "a1.channels.c1.type = memory", "a1.channels.c1.capacity = 10", "a1.channels.c1.keep-alive = 1"]));
    const b = parse(conf(["a1.channels = c1", "", "a1.channels.c1.keep-alive = 1", "a1.channels.c1.capacity = 10", "a1.channels.c1.type = memory"]));
    const c = parse(conf(["a1.channels = c1", "a1.channels.c1.type = memory", "a1.channels.c1.capacity = 11", "a1.channels.c1.keep-alive = 1"]));
    const fp = (r: ReturnType<typeof parse>) => fingerprint(r.config!.channels.get("c1")!);
    expect(fp(a)).toBe(fp(b));
    expect(fp(a)).not.toBe(fp(c));
  });
});
