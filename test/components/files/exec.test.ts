import { describe, expect, test } from "bun:test";
import { definition, ExecSource } from "../../../src/components/sources/exec.ts";
import { bodies, build, context, drain, until, wire } from "../../support/components.ts";

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
  }, 30000);

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
