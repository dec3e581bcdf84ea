import type { CommandDef } from "citty";
import { command, commandGroup } from "./command.ts";
import { FLUME_COMPAT, VERSION } from "../version.ts";

const version = command({
  name: "version",
  description: "Print the version of Flume TS and the Flume release it follows",
  args: {},
  run() {
    console.log(`flume-ts ${VERSION} (compatible with Apache Flume ${FLUME_COMPAT})`);
  },
});

export const main: CommandDef = commandGroup({
  name: "flume",
  version: VERSION,
  description: "Flume TS: a log and event collection agent compatible with Apache Flume",
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
