import { expect, test } from "bun:test";
import { definition, ExecSource } from "../../../src/components/sources/exec.ts";
import { bodies, build, context, drain, recordBatchBytes, until, wire } from "../../support/components.ts";

test("exec: output that never ends a line comes in maxLineLength pieces, nothing lost, with one warning naming the command", async () => {
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

test("exec: a batch holds at most about maxLineLength bytes (twice at worst), so long lines do not multiply memory by batchSize", async () => {
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
