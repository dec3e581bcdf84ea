import type { Channel } from "../../core/channel.ts";
import { LoadBalancingChannelSelector } from "../../core/selectors.ts";
import type { ChannelSelector, LoadBalancingPolicy } from "../../core/selectors.ts";
import { defineComponent } from "../component.ts";
import { builtIn } from "../registry.ts";

export const definition = defineComponent({
  ...builtIn.loadBalancingSelector,
  doc: "Each event goes to one of the source's channels, in rotation or at random.",
  props: {policy: { type: "enum", values: ["round_robin", "random"], default: "round_robin", doc: "How the channel is chosen" }},
  create(config, ctx) {
    return (channels: Channel[]): ChannelSelector => new LoadBalancingChannelSelector(channels, config.policy as LoadBalancingPolicy, ctx.random);
  },
});
