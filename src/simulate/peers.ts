/**
 * The simulated peers of a run, which Kafka and hdfs components reach instead of a broker or a
 * file system: one SimBroker and one SimFileSystem for all agents, the producers outside the
 * run, and what the build context builds for a component whose definition declares a
 * brokerLink or fileStore role (the plan lists them: topology.ts).
 */
import type { Channel } from "../core/channel.ts";
import type { AnySource } from "../core/source.ts";
import type { Sink } from "../core/sink.ts";
import type { VirtualClock } from "../core/virtual-clock.ts";
import type { Epoch, SimClient, SimWorld } from "./components.ts";
import { SimFileSystem, SimHdfsSink } from "./hdfs.ts";
import { OutsideProducer, SimBroker, SimKafkaSink, SimKafkaSource } from "./kafka.ts";
import { SimKafkaChannel } from "./kafka-channel.ts";
import type { SimulationOptions } from "./options.ts";
import { seededRandom } from "./rng.ts";
import type { AgentPlan } from "./topology.ts";

export class SimPeers {
  readonly broker: SimBroker;
  readonly fs: SimFileSystem;
  private readonly producers: OutsideProducer[] = [];
  /** File numbers per hdfs sink, across restarts. */
  private readonly fileNumbers = new Map<string, { n: number }>();

  constructor(
    private readonly o: SimulationOptions,
    clock: VirtualClock,
  ) {
    // Seeded streams of their own: adding a peer never changes the other faults' draws.
    this.broker = new SimBroker(clock, o.kafkaPartitions, o.kafkaLoseAck, seededRandom(o.seed, 11));
    this.fs = new SimFileSystem(clock, o.nameNodeDown, o.hdfsFailClose, o.hdfsTimeout, seededRandom(o.seed, 12));
  }

  /** A producer outside the run writing `topic` with the events `client` makes. */
  addProducer(topic: string, client: SimClient, clock: VirtualClock, world: SimWorld): void {
    this.producers.push(new OutsideProducer(client, this.broker.topic(topic), clock, world));
  }

  start(): void {
    for (const p of this.producers) p.start();
    this.broker.schedule(this.o.kafkaFailovers);
  }

  /** The source that stands for a source of the plan reading the broker, or undefined. */
  source(plan: AgentPlan, name: string, epoch: Epoch, world: SimWorld): AnySource | undefined {
    const reads = plan.brokerSources.get(name);
    return reads ? new SimKafkaSource(name, reads, this.broker, this.o.sinkLatency, epoch, world) : undefined;
  }

  /** The channel that stands for a channel of the plan kept in a topic of the broker, or undefined. */
  channel(plan: AgentPlan, name: string, epoch: Epoch, world: SimWorld): Channel | undefined {
    const kept = plan.brokerChannels.get(name);
    const c = plan.channels.find((x) => x.name === name);
    if (!kept || !c) return undefined;
    return new SimKafkaChannel(name, c.index, kept, c.transactionCapacity ?? Infinity, this.broker, this.o.sinkLatency, epoch, world);
  }

  /** The sink that stands for a sink of the plan writing to the broker or the file system, or undefined. */
  sink(plan: AgentPlan, name: string, epoch: Epoch, world: SimWorld): Sink | undefined {
    const topic = plan.brokerSinks.get(name);
    if (topic) return new SimKafkaSink(name, topic, { hop: topic.hop }, this.broker, this.o.sinkLatency, epoch, world);
    const files = plan.fileSinks.get(name);
    if (!files) return undefined;
    const key = `${plan.name}/${name}`;
    const numbers = this.fileNumbers.get(key) ?? { n: 0 };
    this.fileNumbers.set(key, numbers);
    return new SimHdfsSink(name, files, this.fs, numbers, this.o.sinkLatency, epoch, world);
  }

  get drained(): boolean {
    return this.broker.drained;
  }

  /** The report's lines: one per topic, one for the file system. */
  describe(): string[] {
    return [...this.broker.describe(), ...this.fs.describe()];
  }
}
