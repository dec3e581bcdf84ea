import type { Channel } from "../../core/channel.ts";
import { DEFAULT_MULTIPLEXING_HEADER, MultiplexingChannelSelector } from "../../core/selectors.ts";
import type { ChannelSelector } from "../../core/selectors.ts";
import { defineComponent } from "../component.ts";

function lists(group: Record<string, string>): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(group)) out[k] = v.trim() === "" ? [] : v.trim().split(/\s+/);
  return out;
}

export const definition = defineComponent({
  kind: "selector",
  type: "multiplexing",
  aliases: ["org.apache.flume.channel.MultiplexingChannelSelector"],
  doc: "Routes each event by the value of one header.",
  props: {
    header: { type: "string", default: DEFAULT_MULTIPLEXING_HEADER, doc: "Header whose value picks the channels" },
    default: { type: "list", default: [], doc: "Channels for events whose header is missing or not mapped" },
  },
  groups: {
    mapping: { prefix: "mapping.", doc: "mapping.<value> = channels required for that header value" },
    optional: { prefix: "optional.", doc: "optional.<value> = channels that may take events with that value" },
  },
  create(config) {
    return (channels: Channel[]): ChannelSelector =>
      new MultiplexingChannelSelector(channels, {
        header: config.header,
        mapping: lists(config.mapping),
        optional: lists(config.optional),
        default: config.default,
      });
  },
});
