/** `type = jetstream`: schema and factory of the channel kept in a NATS JetStream stream (see jetstream-channel.ts). */
import type { Props } from "../../../config/schema.ts";
import { CONNECTION_PROPS, CONSUMER_PROPS, connectionSettings, consumerSettings, DEFAULT_MAX_MSGS, natsProblems, STREAM_PROPS, streamSettings } from "../../../nats/settings.ts";
import { defineComponent } from "../../component.ts";
import { builtIn } from "../../registry.ts";
import { JetStreamChannel } from "./jetstream-channel.ts";

export { JetStreamChannel, JetStreamTransaction, type JetStreamChannelOptions } from "./jetstream-channel.ts";

const props = {
  ...CONNECTION_PROPS,
  ...STREAM_PROPS,
  capacity: {
    type: "int",
    default: DEFAULT_MAX_MSGS,
    min: 1,
    aliases: ["max-msgs"],
    roles: ["capacity"],
    doc: "Most events in the channel (stored and not yet taken by a committed transaction), over every agent sharing it; the stream is created with max-msgs = capacity + transactionCapacity",
  },
  ...CONSUMER_PROPS,
  transactionCapacity: { type: "int", default: 1000, min: 1, roles: ["transactionCapacity"], doc: "Maximum number of events one transaction may put or take" },
  prefetch: { type: "int", default: 0, min: 0, doc: "Events pulled from the server ahead of takes (0: transactionCapacity)" },
  "keep-alive": { type: "int", default: 3, min: 0, roles: ["keepAlive"], doc: "Seconds a commit waits for room in a full stream before failing with ChannelFullException" },
  framing: {
    type: "enum",
    values: ["batch", "event"],
    default: "batch",
    doc: "batch: a commit's events go in as few JetStream messages as the server's max_payload allows (header Flume-Batch, read by Flume TS); event: one message per event, readable by any NATS client",
  },
  "commit-timeout": { type: "int", default: 10000, min: 100, doc: "Milliseconds a commit keeps retrying (same message ids) through reconnects and leader elections before failing" },
} as const satisfies Props;

export const definition = defineComponent({
  ...builtIn.jetstreamChannel,
  doc: "Durable channel in a NATS JetStream stream, shared by every agent naming the same stream and consumer (Flume's Kafka channel, on JetStream); replicated on a cluster.",
  props,
  // A killed agent leaves its connection dropped: nothing acked or handed back; the server
  // delivers what it had taken and not committed again after ack-wait.
  // A batch message partly committed when the agent dies or stops comes back whole: its
  // committed events are delivered again (at least once), as declared here.
  durability: {
    crash: (channel: JetStreamChannel) => channel.crash(),
    repeatedOnCrash: (channel: JetStreamChannel) => channel.repeatsOnRestart(),
    repeatedOnStop: (channel: JetStreamChannel) => channel.repeatsOnRestart(),
  },
  // The stream lives on a server: `flume simulate` and `flume replay` run a file channel with
  // the same limits in its place, which keeps committed events through a crash as the stream does.
  simulation: { standIn: "file" },
  validate(o) {
    const errors = natsProblems(o, { publishes: true });
    if (o.transactionCapacity > o.capacity) {
      errors.push({ key: "transactionCapacity", message: `transactionCapacity (${o.transactionCapacity}) cannot be greater than the capacity of the channel (${o.capacity})` });
    }
    return errors;
  },
  create(o, ctx) {
    return new JetStreamChannel(
      ctx.name,
      {
        connection: connectionSettings(o),
        // The stream's own limit leaves room for one transaction's puts before its takes are acknowledged.
        stream: streamSettings(o, o.capacity + o.transactionCapacity),
        consumer: consumerSettings(o),
        capacity: o.capacity,
        transactionCapacity: o.transactionCapacity,
        prefetch: o.prefetch,
        keepAlive: o["keep-alive"],
        commitTimeout: o["commit-timeout"],
        framing: o.framing,
      },
      { clock: ctx.clock, logger: ctx.logger },
    );
  },
});
