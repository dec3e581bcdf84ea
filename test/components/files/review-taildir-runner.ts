/**
 * Child process for review-taildir.test.ts (run as an unprivileged user so that file
 * permissions apply): tails `<logs>/.*\.log` into a memory channel, polls a few times, prints
 * {"lines": [...], "errors": [...]} as JSON. Usage: bun review-taildir-runner.ts <dir>
 */
import path from "node:path";
import { definition, TaildirSource } from "../../../src/components/sources/taildir.ts";
import { bodies, build, context, drain, wire } from "../../support/components.ts";

const dir = process.argv[2];
const ctx = context("r1");
const src = build(definition, { filegroups: "g1", "filegroups.g1": `${path.join(dir, "logs")}/.*\\.log`, positionFile: path.join(dir, "pos.json") }, ctx) as TaildirSource;
const channel = wire(src);
await src.start();
for (let i = 0; i < 5; i++) await src.process();
const lines = bodies(await drain(channel));
await src.stop();
const errors = ctx.logger.lines.filter((l) => l.level === "error").map((l) => l.message);
process.stdout.write(JSON.stringify({ lines, errors }));
