// conf/flume-ts.service asks flume for what it offers, and gives a stop time that covers the drain.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import path from "node:path";
import { parseRunArgs } from "../../src/cli/run.ts";
import { ROOT, runCli } from "../support/helpers.ts";

const unit = readFileSync(path.join(ROOT, "conf", "flume-ts.service"), "utf8");
const setting = (key: string) => unit.split("\n").find((l) => l.startsWith(`${key}=`))?.slice(key.length + 1) ?? "";
const words = (cmd: string) => cmd.split(/\s+/).filter(Boolean);

describe("the systemd unit", () => {
  test("ExecStart's options are ones flume run accepts, with a stop timeout longer than the drain", () => {
    const [binary, command, ...args] = words(setting("ExecStart"));
    expect(binary).toBe("/usr/local/bin/flume");
    expect(command).toBe("run");
    const { options } = parseRunArgs(args);
    expect(options).toMatchObject({ file: "/etc/flume/flume.conf", name: "a1", metricsPort: 41414, metricsBind: "127.0.0.1", logFormat: "json", failFastSec: 60 });
    expect(Number(setting("TimeoutStopSec")) * 1000).toBeGreaterThan(options.drainTimeoutMs);
    expect(setting("ExecReload")).toBe("/bin/kill -HUP $MAINPID");
    // Exit 1 (not started) and 2 (usage) are not worth a restart loop.
    expect(words(setting("RestartPreventExitStatus"))).toEqual(["1", "2"]);
  });

  test("ExecStartPre validates the configuration with flume validate", () => {
    const [binary, command, ...args] = words(setting("ExecStartPre"));
    expect(binary).toBe("/usr/local/bin/flume");
    expect(command).toBe("validate");
    const conf = path.join(ROOT, "conf", "flume.conf");
    const r = runCli(["validate", ...args.map((a) => (a === "/etc/flume/flume.conf" ? conf : a))]);
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" });
  });
});
