import type { Channel } from "../../core/channel.ts";
import { ReplicatingChannelSelector } from "../../core/selectors.ts";
import type { ChannelSelector } from "../../core/selectors.ts";
import type { ComponentDefinition } from "../component.ts";

export const definition: ComponentDefinition<(channels: Channel[]) => ChannelSelector> = {
  schema: {
    kind: "selector",
    type: "replicating",
    aliases: ["org.apache.flume.channel.ReplicatingChannelSelector"],
    doc: "Every event goes to every channel of the source (the default selector).",
    props: [{ key: "optional", type: "list", default: [], doc: "Channels whose failures are logged and ignored" }],
  },
  create(config) {
    return (channels) => new ReplicatingChannelSelector(channels, config.list("optional"));
  },
};
