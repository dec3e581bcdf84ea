import type { Channel } from "../../core/channel.ts";
import { LoadBalancingChannelSelector } from "../../core/selectors.ts";
import type { ChannelSelector, LoadBalancingPolicy } from "../../core/selectors.ts";
import type { ComponentDefinition } from "../component.ts";

export const definition: ComponentDefinition<(channels: Channel[]) => ChannelSelector> = {
  schema: {
    kind: "selector",
    type: "load_balancing",
    aliases: ["org.apache.flume.channel.LoadBalancingChannelSelector"],
    doc: "Each event goes to one of the source's channels, in rotation or at random.",
    props: [{ key: "policy", type: "enum", values: ["round_robin", "random"], default: "round_robin", doc: "How the channel is chosen" }],
  },
  create(config) {
    return (channels) => new LoadBalancingChannelSelector(channels, config.string("policy") as LoadBalancingPolicy);
  },
};
