/**
 * Child process for review-spooldir.test.ts (run as an unprivileged user so that file
 * permissions apply): spools `<dir>/spool` into a memory channel until `<dir>/spool/last.log`
 * is completed (or 3 s pass), prints {"lines": [...], "errors": [...]} as JSON.
 * Usage: bun review-spooldir-runner.ts <dir>
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { definition, SpoolDirectorySource } from "../../../src/components/sources/spooldir.ts";
import { bodies, build, context, drain, wire } from "../../support/components.ts";

const dir = process.argv[2];
const spool = path.join(dir, "spool");
const ctx = context("r1");
const src = build(definition, { spoolDir: spool, pollDelay: "20", trackerDir: path.join(dir, "tracker") }, ctx) as SpoolDirectorySource;
const channel = wire(src);
await src.start();
const started = Date.now();
while (!existsSync(path.join(spool, "last.log.COMPLETED")) && Date.now() - started < 3000) await new Promise((r) => setTimeout(r, 20));
await src.stop();
const lines = bodies(await drain(channel));
const errors = ctx.logger.lines.filter((l) => l.level === "error").map((l) => l.message);
process.stdout.write(JSON.stringify({ lines, errors }));
