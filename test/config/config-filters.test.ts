import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { ParseOptions } from "../../src/config/flume-config.ts";
import { brief, conf, parse } from "../support/config.ts";
import { tempDir } from "../support/helpers.ts";

describe("config filters", () => {
  const { dir, cleanup } = tempDir();
  afterAll(cleanup);
  const script = (name: string, body: string) => {
    const p = path.join(dir, name);
    writeFileSync(p, `#!/bin/sh\n${body}\n`);
    chmodSync(p, 0o755);
    return p;
  };

  const withFilter = (filterLines: string[], value: string, opts: ParseOptions = {}) => {
    const r = parse(conf(["a1.channels = c1", "a1.configfilters = f1", ...filterLines, `a1.channels.c1.dataDirs = ${value}`]), opts);
    return { value: r.config!.channels.get("c1")!.props.dataDirs?.value, problems: r.problems, config: r.config! };
  };

  test("env filter: ${f1['KEY']}, ${f1[\"KEY\"]} and ${f1[KEY]}", () => {
    const r = withFilter(["a1.configfilters.f1.type = env"], "${f1['A']}/${f1[\"B\"]}/${f1[C]}", { env: { A: "a", B: "b", C: "c" } });
    expect(r.problems).toEqual([]);
    expect(r.value).toBe("a/b/c");
    expect(r.config.configFilters.filters.get("f1")!.type?.value).toBe("env");
  });

  test("Flume's class name works as the filter type", () => {
    const r = withFilter(["a1.configfilters.f1.type = org.apache.flume.configfilter.EnvironmentVariableConfigFilter"], "${f1['A']}", { env: { A: "x" } });
    expect(r.value).toBe("x");
  });

  test("env filter: a missing variable is an error at the line using it", () => {
    const r = withFilter(["a1.configfilters.f1.type = env"], "${f1['my_keystore_password']}");
    expect(brief(r.problems)).toEqual([{ line: 4, severity: "error", code: "unresolved-variable", component: "channel c1", key: "dataDirs" }]);
    expect(r.problems[0].message).toBe("${f1['my_keystore_password']}: environment variable my_keystore_password is not set");
  });

  test("external filter: runs command + key and takes the first line of its output", () => {
    const cmd = script("resolver.sh", 'echo "secret-for-$2"; echo "second line"');
    const r = withFilter(["a1.configfilters.f1.type = external", `a1.configfilters.f1.command = ${cmd} --key`, "a1.configfilters.f1.charset = UTF-8"], "/data/${f1['db_password']}");
    expect(r.problems).toEqual([]);
    expect(r.value).toBe("/data/secret-for-db_password");
  });

  test("external filter: a failing command is an error naming its status and stderr", () => {
    const cmd = script("fail.sh", 'echo "no such key $1" >&2; exit 3');
    const r = withFilter(["a1.configfilters.f1.type = external", `a1.configfilters.f1.command = ${cmd}`], "${f1['k']}");
    expect(r.problems).toHaveLength(1);
    expect(r.problems[0].message).toContain("exited with status 3: no such key k");
  });

  test("external filter: a command that hangs is killed after the timeout", () => {
    const cmd = script("hang.sh", "sleep 30");
    const r = withFilter(["a1.configfilters.f1.type = external", `a1.configfilters.f1.command = ${cmd}`, "a1.configfilters.f1.timeout = 200"], "${f1['k']}");
    expect(r.problems).toHaveLength(1);
    expect(r.problems[0].message).toContain("did not finish within 200 ms");
  });

  test("external filter without a command, hadoop, and unknown types are errors at their lines", () => {
    expect(brief(withFilter(["a1.configfilters.f1.type = external"], "x").problems)).toEqual([
      { line: 3, severity: "error", code: "config-filter", component: "configfilter f1", key: "command" },
    ]);
    const hadoop = withFilter(["a1.configfilters.f1.type = hadoop"], "x").problems;
    expect(hadoop[0].message).toContain("not supported");
    expect(brief(withFilter(["", "a1.configfilters.f1.type = vault"], "x").problems)).toEqual([
      { line: 4, severity: "error", code: "config-filter", component: "configfilter f1", key: "type" },
    ]);
  });

  test("a reference to a broken filter says so instead of 'undefined variable'", () => {
    const r = withFilter(["a1.configfilters.f1.type = vault"], "${f1['k']}");
    expect(r.problems.map((p) => p.code)).toEqual(["config-filter", "config-filter"]);
    expect(r.problems[1].message).toBe("config filter f1 cannot resolve ${f1['k']}");
  });

  test("an undeclared filter name is an unresolved variable; listed-but-unconfigured and unlisted filters are reported", () => {
    const r = parse(conf(["a1.channels = c1", "a1.configfilters = f1", "a1.configfilters.f2.type = env", "a1.channels.c1.type = ${f3['x']}"]));
    expect(brief(r.problems)).toEqual([
      { line: 2, severity: "error", code: "config-filter", component: "configfilter f1", key: "" },
      { line: 3, severity: "warning", code: "configured-not-listed", component: "configfilter f2", key: "" },
      { line: 4, severity: "error", code: "unresolved-variable", component: "channel c1", key: "type" },
    ]);
    expect(r.problems[2].message).toBe("${f3['x']} names no config filter");
  });

  test("filter settings themselves use ${env:...} substitution", () => {
    const cmd = script("echo.sh", 'echo "v-$1"');
    const r = withFilter(["a1.configfilters.f1.type = external", "a1.configfilters.f1.command = ${env:RESOLVER}"], "${f1['k']}", { env: { RESOLVER: cmd } });
    expect(r.problems).toEqual([]);
    expect(r.value).toBe("v-k");
  });
});
