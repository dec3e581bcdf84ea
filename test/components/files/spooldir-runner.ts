/**
 * A tiny agent for the spooldir SIGKILL test: spooldir -> a channel whose commit appends the
 * lines to an output file with fsync. Usage: bun spooldir-runner.ts '<json props>' <output> <durable: 0|1>
 */
import { definition } from "../../../src/components/sources/spooldir.ts";
import { ChannelProcessor } from "../../../src/core/channel-processor.ts";
import { ReplicatingChannelSelector } from "../../../src/core/selectors.ts";
import { DeliveringChannel } from "../../support/delivering-channel.ts";
import { build, context } from "../../support/components.ts";

const raw = JSON.parse(process.argv[2]) as Record<string, string>;
const output = process.argv[3];
const durable = process.argv[4] === "1";
const src = build(definition, raw, context("r1"));
const channel = new DeliveringChannel("c1", output, durable);
channel.start();
src.setChannelProcessor(new ChannelProcessor(new ReplicatingChannelSelector([channel])));
process.stdin.on("close", () => process.exit(1));
process.stdin.resume();
process.on("SIGTERM", () => {
  void src.stop().then(() => {
    channel.stop();
    console.log("STOPPED");
    process.exit(0);
  });
});
await src.start();
console.log("READY");
