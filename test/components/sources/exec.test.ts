import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { definition, ExecSource } from "../../../src/components/sources/exec.ts";
import { bodies, build, context, drain, until, wire, recordBatchBytes } from "../../support/components.ts";
import { needsProc } from "../../support/requires.ts";

function make(raw: Record<string, string>, channelOpts?: Parameters<typeof wire>[1]) {
  const ctx = context("e1");
  const src = build(definition, raw, ctx) as ExecSource;
  const channel = wire(src, channelOpts);
  return { src, channel, ctx };
}

describe("exec source", () => {
  test("each output line is an event; the last line without newline too; stderr is logged", async () => {
    const { src, channel, ctx } = make({ command: "printf 'a\\r\\nb\\nc' ; echo oops >&2", shell: "/bin/sh -c", logStdErr: "true", batchSize: "2" });
    src.start();
    await until(() => ctx.logger.lines.some((l) => l.message.includes("exited with 0")), "command exit");
    const got = bodies(await drain(channel));
    await src.stop();
    expect(got).toEqual(["a", "b", "c"]);
    expect(ctx.logger.lines.some((l) => l.message === "StderrLogger[1] = 'oops'")).toBe(true);
    expect(src.counter.get("EventAcceptedCount")).toBe(3);
  });

  test("a batch that is not full is sent after batchTimeout; stop ends a command that is still running", async () => {
    const { src, channel } = make({ command: "echo one; sleep 30", shell: "/bin/sh -c", batchTimeout: "50", batchSize: "100" });
    src.start();
    await until(async () => channel.size === 1, "timed batch");
    expect(bodies(await drain(channel))).toEqual(["one"]);
    await src.stop();
  });

  test("a slow consumer loses no line: a full channel pauses the command's output", async () => {
    const n = 200_000; // ~1.3 MB of output: far more than a pipe holds
    const { src, channel, ctx } = make({ command: `seq 1 ${n}`, batchSize: "500" }, { capacity: 2000, transactionCapacity: 500, keepAlive: 0 });
    src.start();
    await until(() => channel.size >= 1500, "channel filled");
    // The channel is full and nobody drains it: the command must be blocked, not finished.
    await new Promise((r) => setTimeout(r, 300));
    expect(ctx.logger.lines.some((l) => l.message.includes("exited with"))).toBe(false);
    expect(src.counter.get("ChannelWriteFail")).toBeGreaterThan(0);
    // Now let commits wait for room (keep-alive) so the rest flows at the consumer's pace.
    await channel.reconfigure({ capacity: 2000, transactionCapacity: 500, keepAlive: 1 });
    const got: string[] = [];
    await until(async () => {
      got.push(...bodies(await drain(channel, Number.MAX_SAFE_INTEGER, 500)));
      return got.length >= n;
    }, "all lines", 20000);
    await until(() => ctx.logger.lines.some((l) => l.message.includes("exited with 0")), "command exit");
    await src.stop();
    expect(got.length).toBe(n);
    expect(got[0]).toBe("1");
    expect(got[n - 1]).toBe(String(n));
    expect(got.every((v, i) => v === String(i + 1))).toBe(true);
  }, 90_000);

  test("restart runs the command again after restartThrottle; a missing command is logged", async () => {
    const { src, channel, ctx } = make({ command: "echo again", shell: "/bin/sh -c", restart: "true", restartThrottle: "20", batchTimeout: "10" });
    src.start();
    await until(() => channel.size >= 3, "three runs");
    await src.stop();
    expect(bodies(await drain(channel)).slice(0, 3)).toEqual(["again", "again", "again"]);
    expect(ctx.logger.lines.some((l) => l.message.startsWith("Restarting in 20ms, exit code 0"))).toBe(true);

    const missing = make({ command: "/nonexistent/flume-test-command" });
    missing.src.start();
    await until(() => missing.ctx.logger.lines.some((l) => l.message.includes("exited with")), "exit");
    await missing.src.stop();
    expect(missing.ctx.logger.lines.some((l) => l.level === "error" && l.message.includes("/nonexistent/flume-test-command"))).toBe(true);
  });

  test("schema: Flume's names and defaults", () => {
    const props = Object.fromEntries(definition.schema.props.map((p) => [p.key, p.default]));
    expect(props).toMatchObject({ restart: false, restartThrottle: 10000, logStdErr: false, batchSize: 20, batchTimeout: 3000, charset: "UTF-8" });
  });
});

describe("exec source, long lines", () => {
  test("output that never ends a line comes in maxLineLength pieces, nothing lost, with one warning naming the command", async () => {
    const ctx = context("e1");
    // 3000 bytes without a newline, written slowly so they arrive in several pipe reads.
    const command = "for i in 1 2 3; do head -c 1000 /dev/zero | tr '\\0' x; sleep 0.05; done";
    const src = build(definition, { command, shell: "/bin/sh -c", maxLineLength: "700", batchSize: "100" }, ctx) as ExecSource;
    const channel = wire(src);
    src.start();
    await until(() => ctx.logger.lines.some((l) => l.message.includes("exited with 0")), "command exit");
    const got = bodies(await drain(channel));
    await src.stop();
    expect(got.join("")).toBe("x".repeat(3000));
    expect(got.every((b) => b.length <= 700)).toBe(true);
    const warnings = ctx.logger.lines.filter((l) => l.level === "warn" && l.message.includes("maxLineLength"));
    expect(warnings.length).toBe(1);
    expect(warnings[0].message).toContain(command);
  });

  test("a batch holds at most about maxLineLength bytes (twice at worst), so long lines do not multiply memory by batchSize", async () => {
    const ctx = context("e1");
    // 40 lines of 900 bytes: with batchSize 100 they would all sit in one 36 KB batch.
    const command = "for i in $(seq 1 40); do head -c 900 /dev/zero | tr '\\0' y; echo; done";
    const src = build(definition, { command, shell: "/bin/sh -c", maxLineLength: "1000", batchSize: "100" }, ctx) as ExecSource;
    const channel = wire(src);
    const batchBytes = recordBatchBytes(src);
    src.start();
    await until(() => ctx.logger.lines.some((l) => l.message.includes("exited with 0")), "command exit");
    const got = bodies(await drain(channel));
    await src.stop();
    expect(got).toEqual(Array.from({ length: 40 }, () => "y".repeat(900)));
    expect(Math.max(...batchBytes)).toBeLessThanOrEqual(2000);
  });
});

describe("exec source stopping, and a command that cannot run", () => {
  test("lines the command prints while shutting down after SIGTERM are delivered on stop", async () => {
    // On TERM the command takes a moment to clean up, then prints its last lines.
    const command = "trap 'sleep 0.5; echo bye-1; echo bye-2; exit 0' TERM; echo ready; while :; do sleep 0.05; done";
    const { src, channel, ctx } = make({ command, shell: "/bin/sh -c", batchSize: "1" });
    src.start();
    await until(() => channel.size === 1, "first line");
    await src.stop();
    expect(bodies(await drain(channel))).toEqual(["ready", "bye-1", "bye-2"]);
    expect(ctx.logger.lines.filter((l) => l.level === "error")).toEqual([]);
  });

  test("a command that ignores SIGTERM is killed after stopTimeout, and what it printed is kept", async () => {
    const command = "trap '' TERM; echo ready; while :; do sleep 0.05; done";
    const { src, channel } = make({ command, shell: "/bin/sh -c", batchSize: "1", stopTimeout: "300" });
    src.start();
    await until(() => channel.size === 1, "first line");
    await src.stop();
    expect(bodies(await drain(channel))).toEqual(["ready"]);
  });

  needsProc.test("stop also ends what the command left running in the background holding its output", async () => {
    const { src, channel } = make({ command: "sleep 30 & echo $!", shell: "/bin/sh -c", batchSize: "1" });
    src.start();
    await until(() => channel.size === 1, "background pid");
    const pid = Number(bodies(await drain(channel))[0]);
    await src.stop();
    // Killed is enough: a zombie waits for init to reap it.
    const alive = () => {
      try {
        return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
      } catch {
        return false;
      }
    };
    await until(() => !alive(), `background process ${pid} to end`, 3000);
  });

  test("a command that does not exist gives one error naming it, and no stream error", async () => {
    const { src, ctx } = make({ command: "/nonexistent/flume-test-missing-command --flag" });
    src.start();
    await until(() => ctx.logger.lines.some((l) => l.message.includes("exited with")), "exit");
    await src.stop();
    const errors = ctx.logger.lines.filter((l) => l.level === "error").map((l) => l.message);
    expect(errors.length).toBe(1);
    expect(errors[0]).toContain("/nonexistent/flume-test-missing-command");
    expect(errors[0]).not.toContain("Premature close");
  });
});
