import { describe, expect, test } from "bun:test";
import type { ParseOptions } from "../../src/config/flume-config.ts";
import { substitute, type SubstitutionSources } from "../../src/config/substitution.ts";
import { conf, parse } from "../support/config.ts";

describe("substitution as Flume 1.11", () => {
  const one = (value: string, opts: ParseOptions = {}, extra: string[] = []) => {
    const r = parse(conf([...extra, "a1.channels = c1", `a1.channels.c1.type = ${value}`]), opts);
    return { value: r.config!.channels.get("c1")!.type?.value, problems: r.problems };
  };

  test("${env:X}, ${sys:X} from -D, and bare ${KEY} from other properties", () => {
    expect(one("${env:CH_TYPE}", { env: { CH_TYPE: "memory" } }).value).toBe("memory");
    expect(one("${sys:ch.type}", { sysProps: { "ch.type": "file" } }).value).toBe("file");
    expect(one("${a1.default.type}x", {}, ["a1.default.type = mem"]).value).toBe("memx");
    expect(one("${sys:user.home}").value).not.toContain("${");
  });

  test("defaults, nesting, recursion and $$ escapes", () => {
    expect(one("${env:NOPE:-memory}").value).toBe("memory");
    expect(one("${env:${sys:which}}", { sysProps: { which: "T" }, env: { T: "memory" } }).value).toBe("memory");
    expect(one("${outer}", { env: { E: "e" } }, ["outer = ${inner}-x", "inner = ${env:E}"]).value).toBe("e-x");
    expect(one("$${literal}").value).toBe("${literal}");
    expect(one("cost ${ not closed").value).toBe("cost ${ not closed");
  });

  test("an unresolved variable is an error with file:line, and the text stays as written", () => {
    const r = one("${env:MISSING}", {}, ["# a comment"]);
    expect(r.value).toBe("${env:MISSING}");
    expect(r.problems).toHaveLength(1);
    expect(r.problems[0]).toMatchObject({ file: "flume.conf", line: 3, component: "channel c1", key: "type", severity: "error", code: "unresolved-variable" });
    expect(r.problems[0].message).toBe("environment variable MISSING is not set");
    expect(one("${sys:nope}").problems[0].hint).toContain("-Dnope=");
    expect(one("${NOT_A_KEY}").problems[0].message).toBe("variable ${NOT_A_KEY} is not defined");
    expect(one("${date:yyyy}").problems[0].message).toContain("not supported");
  });

  test("a cycle is reported, not looped", () => {
    const r = one("${x}", {}, ["x = ${y}", "y = ${x}"]);
    expect(r.problems.map((p) => p.code)).toEqual(["substitution-cycle"]);
    expect(r.problems[0].message).toContain("x -> y -> x");
  });

  test("EnvVarResolverProperties mode lets bare ${X} read the environment", () => {
    const opts = { env: { HOME_DIR: "/h" }, sysProps: { propertiesImplementation: "org.apache.flume.node.EnvVarResolverProperties" } };
    expect(one("${HOME_DIR}", opts)).toEqual({ value: "/h", problems: [] });
  });

  test("list keys are substituted too", () => {
    const r = parse(conf(["a1.channels = ${env:CHS}", "a1.channels.c1.type = memory"]), { env: { CHS: "c1" } });
    expect(r.config!.listed.channels?.value).toBe("c1");
  });
});

const props: Record<string, string> = { A: "aval" };
const src: SubstitutionSources = { env: { HOME: "/h" }, sys: {}, property: (k) => props[k] };

describe("defaults with variables (${X:-${Y}})", () => {
  test("the default is not looked at when the variable is set: an unset variable there is no error", () => {
    const r = substitute("${env:HOME:-${env:NOT_SET_ANYWHERE}}", src);
    expect(r).toEqual({ value: "/h", issues: [] });
  });

  test("the default is used, and its variables resolved, when the variable is unset", () => {
    expect(substitute("${env:NOT_SET_ANYWHERE:-${A}/x}", src)).toEqual({ value: "aval/x", issues: [] });
  });

  test("an unset variable in a default that is used is still reported", () => {
    const r = substitute("${env:NOT_SET_1:-${env:NOT_SET_2}}", src);
    expect(r.issues.map((i) => i.message)).toEqual(["environment variable NOT_SET_2 is not set"]);
  });

  test("a variable in the name part is resolved before the lookup", () => {
    expect(substitute("${env:${B:-HOME}:-none}", src)).toEqual({ value: "/h", issues: [] });
  });
});
