/** Helpers for the RPC tests: an avro source over a MemoryChannel, raw sockets, two agents joined over avro or thrift. */
import { componentContext } from "../../src/components/component.ts";
import net from "node:net";
import { ChannelProcessor } from "../../src/core/channel-processor.ts";
import { type Clock, systemClock } from "../../src/core/clock.ts";
import { bodyText, type Event } from "../../src/core/event.ts";
import { MemoryLogger } from "../../src/core/logger.ts";
import { MemoryChannel, type MemoryChannelOptions } from "../../src/core/memory-channel.ts";
import { ReplicatingChannelSelector } from "../../src/core/selectors.ts";
import { definition as avroSink, type AvroSink } from "../../src/components/sinks/avro.ts";
import { definition as avroSource, type AvroSource } from "../../src/components/sources/avro.ts";
import { type AgentProcess, freePort, waitForMetrics, waitUntil } from "./helpers.ts";

export function memoryChannel(name = "c1", options: MemoryChannelOptions = { capacity: 10000, transactionCapacity: 10000 }): MemoryChannel {
  const ch = new MemoryChannel(name, options);
  ch.start();
  return ch;
}

/** An avro source configured from Flume-style properties, started on an ephemeral port. */
export async function startSource(props: Record<string, string> = {}, channel = memoryChannel()) {
  const { options: config, errors } = avroSource.parse({ bind: "127.0.0.1", port: "0", ...props });
  if (errors.length > 0) throw new Error(JSON.stringify(errors));
  const validation = avroSource.validate?.(config) ?? [];
  if (validation.length > 0) throw new Error(JSON.stringify(validation));
  const logger = new MemoryLogger();
  const source: AvroSource = avroSource.create(config, componentContext("r1", { agentName: "a1", clock: systemClock, logger }));
  source.setChannelProcessor(new ChannelProcessor(new ReplicatingChannelSelector([channel])));
  await source.start();
  return { source, channel, logger, port: source.port };
}

export function makeSink(props: Record<string, string>, channel: MemoryChannel, clock: Clock = systemClock) {
  const { options: config, errors } = avroSink.parse({ hostname: "127.0.0.1", ...props });
  if (errors.length > 0) throw new Error(JSON.stringify(errors));
  const logger = new MemoryLogger();
  const sink: AvroSink = avroSink.create(config, componentContext("k1", { agentName: "a1", clock, logger }));
  sink.setChannel(channel);
  return { sink, logger };
}

/** Takes everything from the channel in one transaction. */
export async function drain(channel: MemoryChannel, perTransaction = 10000): Promise<Event[]> {
  const out: Event[] = [];
  for (;;) {
    const tx = channel.getTransaction();
    tx.begin();
    let n = 0;
    for (let e = n < perTransaction ? tx.take() : null; e !== null; e = ++n < perTransaction ? tx.take() : null) out.push(e);
    await tx.commit();
    tx.close();
    if (n < perTransaction) return out;
  }
}

export const texts = (events: Event[]) => events.map(bodyText);

/** Connects a raw socket, writes bytes, and resolves with everything received until the server closes. */
export function rawExchange(port: number, bytes: Buffer, opts: { endAfterWrite?: boolean } = {}): Promise<{ data: Buffer; closedByServer: boolean }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let ended = false;
    const socket = net.connect(port, "127.0.0.1", () => {
      socket.write(bytes);
      if (opts.endAfterWrite) {
        ended = true;
        socket.end();
      }
    });
    socket.on("data", (c: Buffer) => chunks.push(c));
    socket.on("error", () => {});
    socket.on("close", () => resolve({ data: Buffer.concat(chunks), closedByServer: !ended }));
    setTimeout(() => {
      socket.destroy();
      reject(new Error("server did not close the connection"));
    }, 4000);
  });
}

/** Waits until cond() is true (polling), for state that settles asynchronously. */
export function until(cond: () => boolean, ms = 3000): Promise<void> {
  return waitUntil(cond, "condition", ms, 5);
}

/** The lines of an RPC sink k (avro, thrift) of agent "a": from channel c1 to 127.0.0.1:port in batches of batchSize. */
export function rpcSinkLines(k: string, port: number, batchSize: number, type = "avro", extra: Record<string, string> = {}): string {
  const props = { type, hostname: "127.0.0.1", port: String(port), "batch-size": String(batchSize), channel: "c1", ...extra };
  return Object.entries(props).map(([key, value]) => `a.sinks.${k}.${key} = ${value}\n`).join("");
}

export interface RpcPair {
  /** The sink's and source's type: avro or thrift. */
  type: string;
  /** Settings both ends get (thrift's protocol). */
  both?: Record<string, string>;
  total: number;
}

/**
 * Two `flume run` agents joined over RPC: B (`type` source -> memory -> null) starts first, then
 * A (seq of `total` events -> memory -> `type` sink, batches of 1000) sends to it. Resolves
 * once B accepted and A drained every event, with both agents' /metrics and processes.
 */
export async function twoAgentsOverRpc(startAgent: (dir: string, name: string, conf: string, metricsPort: number) => AgentProcess, dir: string, pair: RpcPair) {
  const [port, metricsA, metricsB] = [await freePort(), await freePort(), await freePort()];
  const both = Object.entries(pair.both ?? {});
  const agent = (name: string, source: Record<string, string>, sink: string) =>
    [
      `${name}.sources = r1`,
      `${name}.channels = c1`,
      `${name}.sinks = k1`,
      ...Object.entries(source).map(([k, v]) => `${name}.sources.r1.${k} = ${v}`),
      `${name}.sources.r1.channels = c1`,
      `${name}.channels.c1.type = memory`,
      `${name}.channels.c1.capacity = 100000`,
      `${name}.channels.c1.transactionCapacity = 1000`,
      sink,
    ].join("\n");
  const sourceProps = { type: pair.type, bind: "127.0.0.1", port: String(port), ...Object.fromEntries(both) };
  const b = startAgent(dir, "b", agent("b", sourceProps, "b.sinks.k1.type = null\nb.sinks.k1.channel = c1\n"), metricsB);
  await b.waitFor(/agent b started/);
  const a = startAgent(dir, "a", agent("a", { type: "seq", totalEvents: String(pair.total), batchSize: "500" }, rpcSinkLines("k1", port, 1000, pair.type, Object.fromEntries(both))), metricsA);
  const reached = (metricsPort: number, group: string, key: string) =>
    waitForMetrics(metricsPort, `${group}.${key} to reach ${pair.total}`, (m) => m[group]?.[key] === String(pair.total), 15000, 50);
  const mb = await reached(metricsB, "SOURCE.r1", "EventAcceptedCount");
  const ma = await reached(metricsA, "SINK.k1", "EventDrainSuccessCount");
  return { a, b, ma, mb };
}
