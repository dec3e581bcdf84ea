import type { Channel } from "../../core/channel.ts";
import { ReplicatingChannelSelector } from "../../core/selectors.ts";
import type { ChannelSelector } from "../../core/selectors.ts";
import { defineComponent } from "../component.ts";
import { builtIn } from "../registry.ts";
import { channelsOutsideSource } from "./source-channels.ts";

export const definition = defineComponent({
  ...builtIn.replicatingSelector,
  doc: "Every event goes to every channel of the source (the default selector).",
  props: {optional: { type: "list", default: [], doc: "Channels whose failures are logged and ignored" }},
  create(config) {
    return (channels: Channel[]): ChannelSelector => new ReplicatingChannelSelector(channels, config.optional);
  },
  validate: (config, context) => channelsOutsideSource(context, [["optional", config.optional]]),
});
