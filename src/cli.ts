#!/usr/bin/env bun
import { tuneRuntime } from "./cli/runtime-tuning.ts";

// An agent may re-execute itself with its runtime settings: first, before the rest loads.
if (process.argv[2] === "run" || process.argv[2] === "agent") tuneRuntime();
const [{ runMain }, { printUsage }, { main }] = await Promise.all([import("citty"), import("./cli/command.ts"), import("./cli/main.ts")]);

// A reader that stopped reading (`flume replay t.jsonl --step | head`) is not an error. Not for
// the agent: it writes nothing to stdout, its log has a writer of its own (src/agent/logging.ts),
// and making the two stream objects would cost it megabytes of memory.
if (process.argv[2] !== "run" && process.argv[2] !== "agent") {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on("error", (err: NodeJS.ErrnoException) => {
      if (err.code === "EPIPE") process.exit(0);
      throw err;
    });
  }
}

runMain(main, { showUsage: printUsage });
