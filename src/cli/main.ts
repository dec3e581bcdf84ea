import { type CommandDef, defineCommand, showUsage } from "citty";
import { exitUsage, requireSubcommand, unknownArgument } from "./args.ts";
import { FLUME_COMPAT, VERSION } from "../version.ts";

const version = defineCommand({
  meta: { name: "version", description: "Print the version of Flume TS and the Flume release it follows" },
  run({ rawArgs }) {
    const bad = unknownArgument(rawArgs, {});
    if (bad) exitUsage("version", bad);
    console.log(`flume-ts ${VERSION} (compatible with Apache Flume ${FLUME_COMPAT})`);
  },
});

const SUBCOMMANDS = ["version", "run", "agent", "validate", "describe", "channel", "avro-client", "simulate", "replay", "top"];

export const main: CommandDef = defineCommand({
  meta: {
    name: "flume",
    version: VERSION,
    description: "Flume TS: a log and event collection agent compatible with Apache Flume",
  },
  setup: requireSubcommand("flume", SUBCOMMANDS, () => showUsage(main)),
  subCommands: {
    version,
    run: () => import("./run.ts").then((m) => m.run),
    agent: () => import("./run.ts").then((m) => m.agentAlias),
    validate: () => import("./validate.ts").then((m) => m.validate),
    describe: () => import("./describe.ts").then((m) => m.describe),
    channel: () => import("./channel.ts").then((m) => m.channel),
    "avro-client": () => import("./avro-client.ts").then((m) => m.avroClient),
    simulate: () => import("./simulate.ts").then((m) => m.simulate),
    replay: () => import("./replay.ts").then((m) => m.replay),
    top: () => import("./top.ts").then((m) => m.top),
  },
});
