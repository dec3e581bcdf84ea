/**
 * Child process for the TAILDIR exactly-once test: TAILDIR -> file channel, no sink. The
 * source's positions are committed in the same file channel transactions as its lines, so a
 * SIGKILL at any moment must leave every line in the channel exactly once. Prints
 * "size <n>" whenever the channel size changed (polled every 2 ms); SIGTERM stops it cleanly.
 *
 * usage: bun taildir-runner.ts <channel dir> '<json: TAILDIR properties>'
 */
import { ChannelProcessor } from "../../src/core/channel-processor.ts";
import { ReplicatingChannelSelector } from "../../src/core/selectors.ts";
import { definition } from "../../src/components/sources/taildir.ts";
import { FileChannel } from "../../src/components/channels/file/index.ts";
import { build, context } from "../support/components.ts";
import { options } from "../support/file-channel.ts";

const [dir, json] = process.argv.slice(2);
const ch = new FileChannel("c1", options(dir, { maxFileSize: 64 * 1024, checkpointInterval: 1000 }));
await ch.start();
// The position file is written rarely on purpose: resuming must rely on the channel's positions.
const src = build(definition, { writePosInterval: String(3600_000), ...(JSON.parse(json) as Record<string, string>) }, context("r1"));
src.setChannelProcessor(new ChannelProcessor(new ReplicatingChannelSelector([ch])));
let running = true;
process.on("SIGTERM", () => {
  running = false;
});
await src.start();
process.stdout.write("READY\n");
let last = -1;
const report = setInterval(() => {
  if (ch.size === last) return;
  last = ch.size;
  process.stdout.write(`size ${last}\n`);
}, 2);
while (running) {
  const status = await src.process();
  if (status === "BACKOFF") await new Promise((r) => setTimeout(r, 10));
}
clearInterval(report);
await src.stop();
await ch.stop();
process.stdout.write("STOPPED\n");
process.exit(0);
