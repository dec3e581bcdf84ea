#!/usr/bin/env bun
import { runMain } from "citty";
import { printUsage } from "./cli/command.ts";
import { main } from "./cli/main.ts";

// A reader that stopped reading (`flume replay t.jsonl --step | head`) is not an error.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (err: NodeJS.ErrnoException) => {
    if (err.code === "EPIPE") process.exit(0);
    throw err;
  });
}

runMain(main, { showUsage: printUsage });
