/**
 * Child process for review2-fsync.test.ts, run under strace: a TAILDIR source records a file
 * in its position file, and a spooling directory source reads one file to completion.
 * Usage: bun review2-fsync-runner.ts <dir>
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { definition as spooldir, SpoolDirectorySource } from "../../../src/components/sources/spooldir.ts";
import { definition as taildir, TaildirSource } from "../../../src/components/sources/taildir.ts";
import { build, context, wire } from "../../support/components.ts";

const dir = process.argv[2];
const logs = path.join(dir, "logs");
const spool = path.join(dir, "spool");
mkdirSync(logs);
mkdirSync(spool);
writeFileSync(path.join(logs, "app.log"), "a1\na2\n");
writeFileSync(path.join(spool, "in.log"), "s1\ns2\n");

const tail = build(taildir, { filegroups: "g1", "filegroups.g1": `${logs}/app\\.log`, positionFile: path.join(dir, "state", "pos.json") }, context("t1")) as TaildirSource;
wire(tail);
await tail.start();
await tail.process();
await tail.stop();

const spoolSrc = build(spooldir, { spoolDir: spool, pollDelay: "20", trackerDir: path.join(dir, "tracker") }, context("s1")) as SpoolDirectorySource;
wire(spoolSrc);
await spoolSrc.start();
const started = Date.now();
while (!existsSync(path.join(spool, "in.log.COMPLETED")) && Date.now() - started < 3000) await new Promise((r) => setTimeout(r, 20));
await spoolSrc.stop();
