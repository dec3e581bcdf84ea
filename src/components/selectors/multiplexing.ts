import type { Channel } from "../../core/channel.ts";
import { DEFAULT_MULTIPLEXING_HEADER, MultiplexingChannelSelector } from "../../core/selectors.ts";
import type { ChannelSelector } from "../../core/selectors.ts";
import { defineComponent } from "../component.ts";
import { builtIn } from "../registry.ts";
import { channelsOutsideSource } from "./source-channels.ts";

const under = (prefix: string, group: Readonly<Record<string, readonly string[]>>) => Object.entries(group).map(([value, names]) => [prefix + value, names] as const);

export const definition = defineComponent({
  ...builtIn.multiplexingSelector,
  doc: "Routes each event by the value of one header.",
  props: {
    header: { type: "string", default: DEFAULT_MULTIPLEXING_HEADER, doc: "Header whose value picks the channels" },
    default: { type: "list", default: [], doc: "Channels for events whose header is missing or not mapped" },
  },
  groups: {
    mapping: { prefix: "mapping.", doc: "mapping.<value> = channels required for that header value", value: { type: "list" } },
    optional: { prefix: "optional.", doc: "optional.<value> = channels that may take events with that value", value: { type: "list" } },
  },
  create(config) {
    return (channels: Channel[]): ChannelSelector =>
      new MultiplexingChannelSelector(channels, {
        header: config.header,
        mapping: config.mapping,
        optional: config.optional,
        default: config.default,
      });
  },
  validate(config, context) {
    const empty = Object.entries(config.mapping).filter(([, names]) => names.length === 0).map(([value]) => ({ key: `mapping.${value}`, message: "maps to no channel" }));
    return [...empty, ...channelsOutsideSource(context, [["default", config.default], ...under("mapping.", config.mapping), ...under("optional.", config.optional)])];
  },
});
