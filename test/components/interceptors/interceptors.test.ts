import { describe, expect, test } from "bun:test";
import { hostname } from "node:os";
import { definition as host } from "../../../src/components/interceptors/host.ts";
import { definition as regexExtractor } from "../../../src/components/interceptors/regex-extractor.ts";
import { definition as regexFilter } from "../../../src/components/interceptors/regex-filter.ts";
import { definition as removeHeader } from "../../../src/components/interceptors/remove-header.ts";
import { definition as searchReplace } from "../../../src/components/interceptors/search-replace.ts";
import { definition as staticDef } from "../../../src/components/interceptors/static.ts";
import { definition as timestamp } from "../../../src/components/interceptors/timestamp.ts";
import { definition as uuid } from "../../../src/components/interceptors/uuid.ts";
import type { Clock } from "../../../src/core/clock.ts";
import { systemClock } from "../../../src/core/clock.ts";
import { bodyText, createEvent } from "../../../src/core/event.ts";
import { InterceptorChain } from "../../../src/core/interceptor.ts";
import { build, configErrors } from "../../support/interceptors.ts";

const fixedClock: Clock = { ...systemClock, now: () => 1700000000123, setTimeout: systemClock.setTimeout.bind(systemClock), clearTimeout: systemClock.clearTimeout.bind(systemClock), sleep: systemClock.sleep.bind(systemClock) };

describe("type names", () => {
  test("each interceptor answers to Flume's alias and its Builder class name", () => {
    const expected: [string, string, string][] = [
      [timestamp.schema.type, "timestamp", "org.apache.flume.interceptor.TimestampInterceptor$Builder"],
      [host.schema.type, "host", "org.apache.flume.interceptor.HostInterceptor$Builder"],
      [staticDef.schema.type, "static", "org.apache.flume.interceptor.StaticInterceptor$Builder"],
      [removeHeader.schema.type, "remove_header", "org.apache.flume.interceptor.RemoveHeaderInterceptor$Builder"],
      [uuid.schema.type, "uuid", "org.apache.flume.sink.solr.morphline.UUIDInterceptor$Builder"],
      [regexFilter.schema.type, "regex_filter", "org.apache.flume.interceptor.RegexFilteringInterceptor$Builder"],
      [regexExtractor.schema.type, "regex_extractor", "org.apache.flume.interceptor.RegexExtractorInterceptor$Builder"],
      [searchReplace.schema.type, "search_replace", "org.apache.flume.interceptor.SearchAndReplaceInterceptor$Builder"],
    ];
    const defs = [timestamp, host, staticDef, removeHeader, uuid, regexFilter, regexExtractor, searchReplace];
    expected.forEach(([type, alias, fqcn], i) => {
      expect(type).toBe(alias);
      expect(defs[i].schema.aliases).toContain(fqcn);
      expect(defs[i].schema.kind).toBe("interceptor");
    });
  });
});

describe("timestamp", () => {
  test("sets the timestamp header in epoch ms, and preserveExisting keeps an existing one", () => {
    const { component } = build(timestamp, {}, fixedClock);
    const [a] = component.interceptAll([createEvent("x", { timestamp: "5" })]);
    expect(a.headers.timestamp).toBe("1700000000123");
    const keep = build(timestamp, { preserveExisting: "true", headerName: "ts" }, fixedClock).component;
    expect(keep.intercept(createEvent("x", { ts: "5" }))?.headers.ts).toBe("5");
    expect(keep.intercept(createEvent("x"))?.headers.ts).toBe("1700000000123");
  });
});

describe("host", () => {
  test("useIP=false gives the host name in the configured header; default puts an IP in host", () => {
    const named = build(host, { useIP: "false", hostHeader: "agentHost" }).component;
    expect(named.intercept(createEvent("x"))?.headers.agentHost).toBe(hostname());
    const ip = build(host, {}).component.intercept(createEvent("x"))?.headers.host ?? "";
    expect(ip).toMatch(/^(\d+\.\d+\.\d+\.\d+|[0-9a-f:]+)$/);
    expect(build(host, { preserveExisting: "true" }).component.intercept(createEvent("x", { host: "h0" }))?.headers.host).toBe("h0");
  });
});

describe("static", () => {
  test("adds key/value; by default an existing header is preserved", () => {
    const i = build(staticDef, { key: "datacenter", value: "NEW_YORK" }).component;
    expect(i.intercept(createEvent("x"))?.headers.datacenter).toBe("NEW_YORK");
    expect(i.intercept(createEvent("x", { datacenter: "PARIS" }))?.headers.datacenter).toBe("PARIS");
    const over = build(staticDef, { key: "k", value: "v", preserveExisting: "false" }).component;
    expect(over.intercept(createEvent("x", { k: "old" }))?.headers.k).toBe("v");
    expect(build(staticDef, {}).component.intercept(createEvent("x"))?.headers).toEqual({ key: "value" });
  });
});

describe("remove_header", () => {
  test("removes by name, by list with the default separator, and by whole-name regex", () => {
    const i = build(removeHeader, { withName: "a", fromList: "b , c,d", matching: "tmp_.*" }).component;
    const e = i.intercept(createEvent("x", { a: "1", b: "2", c: "3", d: "4", tmp_x: "5", xtmp_y: "6", keep: "7" }));
    expect(e?.headers).toEqual({ xtmp_y: "6", keep: "7" });
    const sep = build(removeHeader, { fromList: "x;y", fromListSeparator: ";" }).component;
    expect(sep.intercept(createEvent("b", { x: "1", y: "2", z: "3" }))?.headers).toEqual({ z: "3" });
  });
  test("a bad regex is a configuration error naming the key", () => {
    expect(configErrors(removeHeader, { matching: "([" }).join()).toContain("matching");
  });
});

describe("uuid", () => {
  test("sets a prefixed UUID in id, unique per event, preserving an existing id by default", () => {
    const i = build(uuid, { prefix: "agent1-" }).component;
    const events = i.interceptAll([createEvent("a"), createEvent("b"), createEvent("c", { id: "mine" })]);
    expect(events[0].headers.id).toMatch(/^agent1-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(events[0].headers.id).not.toBe(events[1].headers.id);
    expect(events[2].headers.id).toBe("mine");
  });
});

describe("regex_filter", () => {
  test("keeps matching events by default, drops them with excludeEvents", () => {
    const bodies = ["ERROR disk", "INFO ok", "WARN ERROR-ish"];
    const keep = build(regexFilter, { regex: "ERROR" }).component;
    expect(keep.interceptAll(bodies.map((b) => createEvent(b))).map(bodyText)).toEqual(["ERROR disk", "WARN ERROR-ish"]);
    const drop = build(regexFilter, { regex: "^INFO", excludeEvents: "true" }).component;
    expect(drop.interceptAll(bodies.map((b) => createEvent(b))).map(bodyText)).toEqual(["ERROR disk", "WARN ERROR-ish"]);
    expect(build(regexFilter, {}).component.interceptAll([createEvent("")]).length).toBe(1);
  });
});

describe("regex_extractor", () => {
  test("the User Guide example: groups into headers with pass-through serializers", () => {
    const i = build(regexExtractor, {
      regex: "(\\d):(\\d):(\\d)",
      serializers: "s1 s2 s3",
      "serializers.s1.name": "one",
      "serializers.s2.name": "two",
      "serializers.s3.name": "three",
    }).component;
    expect(i.intercept(createEvent("1:2:3.4foobar5"))?.headers).toEqual({ one: "1", two: "2", three: "3" });
    expect(i.intercept(createEvent("no digits"))?.headers).toEqual({});
  });

  test("the millis serializer parses the group with its pattern; extra groups without serializer are skipped", () => {
    const i = build(regexExtractor, {
      regex: "^(\\d\\d\\d\\d-\\d\\d-\\d\\d \\d\\d:\\d\\d)\\s+(\\w+)\\s+(\\w+)",
      serializers: "ts lvl",
      "serializers.ts.name": "timestamp",
      "serializers.ts.type": "org.apache.flume.interceptor.RegexExtractorInterceptorMillisSerializer",
      "serializers.ts.pattern": "yyyy-MM-dd HH:mm",
      "serializers.lvl.name": "level",
    }).component;
    const e = i.intercept(createEvent("2012-10-18 18:47 ERROR something broke"));
    expect(e?.headers.timestamp).toBe(String(new Date(2012, 9, 18, 18, 47).getTime()));
    expect(e?.headers.level).toBe("ERROR");
    expect(Object.keys(e?.headers ?? {}).length).toBe(2);
  });

  test("millis with zone offset and fraction", () => {
    const i = build(regexExtractor, {
      regex: "at (\\S+)",
      serializers: "t",
      "serializers.t.name": "ts",
      "serializers.t.type": "org.apache.flume.interceptor.RegexExtractorInterceptorMillisSerializer",
      "serializers.t.pattern": "yyyy-MM-dd'T'HH:mm:ss.SSSZ",
    }).component;
    expect(i.intercept(createEvent("at 2020-01-02T03:04:05.678+0100"))?.headers.ts).toBe(String(Date.UTC(2020, 0, 2, 2, 4, 5, 678)));
  });

  test("configuration errors name the key", () => {
    expect(configErrors(regexExtractor, { regex: "(a)", serializers: "s1" }).join()).toContain("serializers.s1.name");
    expect(
      configErrors(regexExtractor, {
        regex: "(a)",
        serializers: "s1",
        "serializers.s1.name": "x",
        "serializers.s1.type": "org.apache.flume.interceptor.RegexExtractorInterceptorMillisSerializer",
      }).join(),
    ).toContain("serializers.s1.pattern");
    expect(configErrors(regexExtractor, {}).join()).toContain("regex");
  });
});

describe("search_replace", () => {
  test("replaces all matches with Java group references", () => {
    const i = build(searchReplace, { searchPattern: "(\\w+)@example\\.com", replaceString: "$1 at example" }).component;
    expect(bodyText(i.intercept(createEvent("mail a@example.com and b@example.com")) ?? createEvent(""))).toBe("mail a at example and b at example");
    const strip = build(searchReplace, { searchPattern: "^[A-Za-z0-9_]+\\s+" }).component;
    expect(bodyText(strip.intercept(createEvent("DEBUG the message")) ?? createEvent(""))).toBe("the message");
    const dollar = build(searchReplace, { searchPattern: "USD", replaceString: "\\$" }).component;
    expect(bodyText(dollar.intercept(createEvent("5 USD")) ?? createEvent(""))).toBe("5 $");
  });
  test("searchPattern is required", () => {
    expect(configErrors(searchReplace, {}).join()).toContain("searchPattern");
  });
});

describe("chain", () => {
  test("interceptors run in order over a batch", () => {
    const chain = new InterceptorChain([
      build(regexFilter, { regex: "keep" }).component,
      build(staticDef, { key: "env", value: "prod" }).component,
      build(timestamp, {}, fixedClock).component,
    ]);
    const out = chain.interceptAll([createEvent("keep 1"), createEvent("drop"), createEvent("keep 2")]);
    expect(out.map((e) => [bodyText(e), e.headers.env, e.headers.timestamp])).toEqual([
      ["keep 1", "prod", "1700000000123"],
      ["keep 2", "prod", "1700000000123"],
    ]);
  });
});
