import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { definition, ExecSource } from "../../../src/components/sources/exec.ts";
import { bodies, build, context, drain, until, wire } from "../../support/components.ts";

function make(raw: Record<string, string>) {
  const ctx = context("e1");
  const src = build(definition, raw, ctx) as ExecSource;
  const channel = wire(src);
  return { src, channel, ctx };
}

test("exec: lines the command prints while shutting down after SIGTERM are delivered on stop", async () => {
  // On TERM the command takes a moment to clean up, then prints its last lines.
  const command = "trap 'sleep 0.5; echo bye-1; echo bye-2; exit 0' TERM; echo ready; while :; do sleep 0.05; done";
  const { src, channel, ctx } = make({ command, shell: "/bin/sh -c", batchSize: "1" });
  src.start();
  await until(() => channel.size === 1, "first line");
  await src.stop();
  expect(bodies(await drain(channel))).toEqual(["ready", "bye-1", "bye-2"]);
  expect(ctx.logger.lines.filter((l) => l.level === "error")).toEqual([]);
});

test("exec: a command that ignores SIGTERM is killed after stopTimeout, and what it printed is kept", async () => {
  const command = "trap '' TERM; echo ready; while :; do sleep 0.05; done";
  const { src, channel } = make({ command, shell: "/bin/sh -c", batchSize: "1", stopTimeout: "300" });
  src.start();
  await until(() => channel.size === 1, "first line");
  await src.stop();
  expect(bodies(await drain(channel))).toEqual(["ready"]);
});

test("exec: a command that does not exist gives one error naming it, and no stream error", async () => {
  const { src, ctx } = make({ command: "/nonexistent/flume-review2-command --flag" });
  src.start();
  await until(() => ctx.logger.lines.some((l) => l.message.includes("exited with")), "exit");
  await src.stop();
  const errors = ctx.logger.lines.filter((l) => l.level === "error").map((l) => l.message);
  expect(errors.length).toBe(1);
  expect(errors[0]).toContain("/nonexistent/flume-review2-command");
  expect(errors[0]).not.toContain("Premature close");
});

test("exec: stop also ends what the command left running in the background holding its output", async () => {
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
