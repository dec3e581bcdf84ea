/** `type = jetstream`: schema and factory of the channel kept in a NATS JetStream stream (see jetstream-channel.ts). */
import type { ComponentSchema } from "../../../config/schema.ts";
import { CONNECTION_PROPS, CONSUMER_PROPS, connectionSettings, consumerSettings, streamProps, streamSettings, validateCommon } from "../../../nats/settings.ts";
import type { ComponentDefinition } from "../../component.ts";
import { JetStreamChannel } from "./jetstream-channel.ts";

export { JetStreamChannel, JetStreamTransaction, type JetStreamChannelOptions } from "./jetstream-channel.ts";

export const schema: ComponentSchema = {
  kind: "channel",
  type: "jetstream",
  aliases: ["nats", "org.apache.flume.channel.jetstream.JetStreamChannel"],
  doc: "Durable channel in a NATS JetStream stream, shared by every agent naming the same stream and consumer (Flume's Kafka channel, on JetStream); replicated on a cluster.",
  props: [
    ...CONNECTION_PROPS,
    ...streamProps("capacity"),
    ...CONSUMER_PROPS,
    { key: "transactionCapacity", type: "int", default: 1000, min: 1, doc: "Maximum number of events one transaction may put or take" },
    { key: "prefetch", type: "int", default: 0, min: 0, doc: "Events pulled from the server ahead of takes (0: transactionCapacity)" },
    { key: "keep-alive", type: "int", default: 3, min: 0, doc: "Seconds a commit waits for room in a full stream before failing with ChannelFullException" },
    { key: "commit-timeout", type: "int", default: 10000, min: 100, doc: "Milliseconds a commit keeps retrying (same message ids) through reconnects and leader elections before failing" },
  ],
};

export const definition: ComponentDefinition<JetStreamChannel> = {
  schema,
  validate(config) {
    const errors = validateCommon(config, { publishes: true, consumes: true });
    if (config.int("transactionCapacity") > config.int("capacity")) {
      errors.push({ key: "transactionCapacity", message: `transactionCapacity (${config.int("transactionCapacity")}) cannot be greater than the capacity of the channel (${config.int("capacity")})` });
    }
    return errors;
  },
  create(config, ctx) {
    return new JetStreamChannel(
      ctx.name,
      {
        connection: connectionSettings(config),
        stream: streamSettings(config, "capacity"),
        consumer: consumerSettings(config),
        transactionCapacity: config.int("transactionCapacity"),
        prefetch: config.int("prefetch"),
        keepAlive: config.int("keep-alive"),
        commitTimeout: config.int("commit-timeout"),
      },
      { clock: ctx.clock, logger: ctx.logger },
    );
  },
};
