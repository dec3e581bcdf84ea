/**
 * The simulation loop. The real core (channels, ChannelProcessor, selectors, interceptors,
 * sink processors, runners) runs on a VirtualClock; the loop lets everything run to its next
 * wait, then moves time to the next timer. Time moves only when all work is done, so a run
 * is the same on every machine for the same seed (file channel I/O is awaited before time
 * moves, too).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Channel } from "../core/channel.ts";
import { ChannelException } from "../core/errors.ts";
import { silentLogger } from "../core/logger.ts";
import { type BuiltAgent, buildAgent } from "../agent/build.ts";
import { VirtualClock } from "../core/virtual-clock.ts";
import { Epoch, SimClient, SimSink, SimSource, type SimWorld } from "./components.ts";
import { Ledger, type LedgerSummary, verdict } from "./ledger.ts";
import { formatTime, type SimulationOptions } from "./options.ts";
import { seededRandom } from "./rng.ts";
import { Timeline } from "./timeline.ts";
import { type Topology, buildTopology } from "./topology.ts";
import { bothObservers, type ChannelObserver, channelInfo, FileTraceOutput, simIdOf, TraceRecorder, TracedChannel, type TracedTransaction, TraceTarget } from "./trace.ts";

/** Flume's sink runner backoff (SinkRunner: 1000 ms steps, at most 5000 ms). */
const SINK_RUNNER_BACKOFF = { backoffSleepIncrement: 1000, maxBackoffSleep: 5000 };

export interface SimulationHooks {
  /** Write the transaction trace here. */
  traceFile?: string;
  /** Record the history of this event id. */
  watch?: number;
  /** Called now and then with the progress (for a progress bar). */
  onProgress?(p: Progress): void;
}

export interface Progress {
  time: number;
  produced: number;
  delivered: number;
  total: number;
}

export interface CrashRecord {
  at: number;
  lost: { channel: string; lost: number }[];
}

export interface SimulationResult {
  topology: string[];
  warnings: string[];
  events: number;
  seed: number;
  produced: number;
  /** Batches the clients had accepted by the source (after retries). */
  clientAccepted: number;
  summary: LedgerSummary;
  retries: number;
  putFailures: number;
  sinkBatches: number;
  sinkFailures: number;
  deliveries: number;
  crashes: CrashRecord[];
  channels: { name: string; type: string; durable: boolean; capacity: number; peak: number; end: number }[];
  /** Virtual time at the end (ms). */
  time: number;
  /** True when every produced event was accepted and every channel drained before maxTime. */
  completed: boolean;
  verdict: { held: boolean; line: string };
  firstLost?: { id: number; channel: string; history: string[] };
  timeline: Timeline;
  /** The trace recorder's own ledger (when tracing): must equal summary. */
  traceSummary?: LedgerSummary;
}

/** Whether a durable channel's real disk I/O is still running. */
function ioBusy(channel: Channel): boolean {
  if (!channel.ioBusy) throw new Error(`simulate: channel ${channel.name} cannot say whether its disk writes are done; the simulation would not be deterministic`);
  return channel.ioBusy();
}

/** One turn of the event loop after all pending microtasks (setImmediate is cheap: ~1 µs; setTimeout(0) is ~1 ms). */
const immediate: () => Promise<void> =
  typeof setImmediate === "function" ? () => new Promise((resolve) => setImmediate(resolve)) : () => new Promise((resolve) => setTimeout(resolve, 0));

interface Running {
  epoch: Epoch;
  targets: TraceTarget[];
  built: BuiltAgent;
  durable: Channel[];
}

export async function runSimulation(o: SimulationOptions, hooks: SimulationHooks = {}): Promise<SimulationResult> {
  const ownWorkDir = o.workDir === undefined;
  const workDir = o.workDir ?? mkdtempSync(path.join(tmpdir(), "flume-simulate-"));
  try {
    return await simulate(o, buildTopology(o), workDir, hooks);
  } finally {
    if (ownWorkDir) rmSync(workDir, { recursive: true, force: true });
  }
}

/**
 * Where the simulation keeps what a configured path names: one scratch directory per distinct
 * path, the same across restarts of the simulated process (so a durable channel finds its data).
 */
function scratchStorage(workDir: string): (configured: string) => string {
  const dirs = new Map<string, string>();
  return (configured) => {
    let dir = dirs.get(configured);
    if (dir === undefined) dirs.set(configured, (dir = path.join(workDir, `storage-${dirs.size + 1}`)));
    return dir;
  };
}

async function simulate(o: SimulationOptions, topo: Topology, workDir: string, hooks: SimulationHooks): Promise<SimulationResult> {
  let running: Running | null = null;
  const settle = async (): Promise<void> => {
    for (;;) {
      await immediate();
      if (!running || !running.durable.some(ioBusy)) return;
    }
  };
  const clock = new VirtualClock(0, settle);
  const ledger = new Ledger(
    topo.channels.map((c) => ({ name: c.name, durable: c.durable })),
    o.events,
  );
  const timeline = new Timeline(topo.channels.map((c) => ({ name: c.name, capacity: c.capacity })));
  const recorder = hooks.traceFile
    ? new TraceRecorder(
        new FileTraceOutput(hooks.traceFile),
        [...topo.model.channels.values()].map(channelInfo),
        { clock, idOf: simIdOf, deliveries: "sink", seed: o.seed },
      )
    : null;
  const txCounter = recorder?.transactionCounter ?? { n: 1 };
  const watch = hooks.watch ?? -1;
  const history: string[] = [];
  const note = (text: string) => history.push(`${formatTime(clock.now()).padStart(10)}  ${text}`);
  const putRandom = seededRandom(o.seed, 2);
  const stats = { produced: 0, clientAccepted: 0, putFailures: 0, sinkFailures: 0, deliveries: 0 };

  const world: SimWorld = {
    sinkFail: o.failSink,
    sinkRandom: seededRandom(o.seed, 1),
    partialRandom: seededRandom(o.seed, 3),
    sinkBatches: 0,
    produced(ids, by) {
      stats.produced += ids.length;
      if (watch >= 0 && ids.includes(watch)) note(`produced by the client of source ${by} (batch of ${ids.length})`);
    },
    accepted(ids, by) {
      stats.clientAccepted += ids.length;
      if (watch >= 0 && ids.includes(watch)) note(`source ${by} acknowledged the batch to its client`);
    },
    putFailed(ids, by, err) {
      stats.putFailures++;
      timeline.putFailure(clock.now());
      if (watch >= 0 && ids.includes(watch)) note(`source ${by} could not put the batch (${err.message}); the client will retry`);
    },
    delivered(tx, by, ids) {
      stats.deliveries += ids.length;
      ledger.delivered(tx.target.index, ids);
      recorder?.deliver(tx, by, ids);
      timeline.delivered(clock.now(), ids.length);
      if (watch >= 0 && ids.includes(watch)) note(`delivered by sink ${by} (tx ${tx.id})`);
    },
    sinkFailed(tx, by, batch, reached, size) {
      stats.sinkFailures++;
      timeline.sinkFailure(clock.now());
      if (watch >= 0 && tx.takes.some((e) => simIdOf(e) === watch)) note(`sink ${by} failed batch ${batch} after ${reached} of ${size} events got through; tx ${tx.id} rolls back`);
    },
  };

  const has = (tx: TracedTransaction, which: "puts" | "takes") => watch >= 0 && tx[which].some((e) => simIdOf(e) === watch);
  const simObserver: ChannelObserver = {
    begin() {},
    put() {},
    take() {},
    close() {},
    commit(tx, error) {
      if (error) {
        if (has(tx, "puts")) note(`put into ${tx.channel} by ${tx.by ?? "?"} failed at commit (tx ${tx.id}): ${error.message}`);
        return;
      }
      const puts = tx.puts.length > 0 ? tx.puts.map(simIdOf) : [];
      const takes = tx.takes.length > 0 ? tx.takes.map(simIdOf) : [];
      ledger.committed(tx.target.index, puts, takes);
      if (has(tx, "puts")) note(`committed into channel ${tx.channel} by ${tx.by ?? "?"} (tx ${tx.id})`);
      if (has(tx, "takes")) note(`take by ${tx.by ?? "?"} committed: it left channel ${tx.channel} (tx ${tx.id})`);
    },
    rollback(tx) {
      ledger.rolledBack();
      if (has(tx, "puts")) note(`put into ${tx.channel} rolled back (tx ${tx.id})`);
      if (has(tx, "takes")) note(`take by ${tx.by ?? "?"} rolled back: back in channel ${tx.channel} (tx ${tx.id})`);
    },
    beforeCommit(tx) {
      if (o.failPut > 0 && tx.puts.length > 0 && putRandom() < o.failPut) {
        return new ChannelException(`simulated put failure on channel ${tx.channel}`);
      }
      return null;
    },
  };
  const observer = recorder ? bothObservers(simObserver, recorder) : simObserver;

  const ids = { next: 0, total: o.events };
  const sources = [...topo.model.sources.values()];
  const interval = o.rate > 0 ? (batch: number) => Math.max(1, Math.round((batch * sources.length * 1000) / o.rate)) : () => 0;
  const clients = new Map(sources.map((s) => [s.name, new SimClient(s.name, s.options.batchSize as number, interval(s.options.batchSize as number), ids)]));
  const storagePath = scratchStorage(workDir);
  const random = seededRandom(o.seed, 9);
  const channelIndex = new Map(topo.channels.map((c, k) => [c.name, k]));

  let epochNo = 0;
  /** Builds the agent with the one builder, as `flume run` does, and starts it. */
  async function start(): Promise<Running> {
    const epoch = new Epoch(++epochNo, clock);
    const targets: TraceTarget[] = [];
    const built = buildAgent(topo.model, {
      agentName: topo.model.agent,
      clock: epoch,
      logger: () => silentLogger,
      random,
      storagePath,
      runnerBackoff: SINK_RUNNER_BACKOFF,
      wrapChannel: (channel, m) => {
        const target = new TraceTarget(channel, channelIndex.get(m.name) as number, observer, txCounter);
        targets[target.index] = target;
        return new TracedChannel(target);
      },
      view: (channel, user) => new TracedChannel((channel as TracedChannel).target, user),
      source: (m) => new SimSource(m.name, clients.get(m.name) as SimClient, epoch, world),
      sink: (m) => new SimSink(m.name, m.options.batchSize as number, o.sinkLatency, epoch, world),
    });
    const durable = [...built.channels.values()].filter((c) => c.model.definition.durability !== undefined);
    const r: Running = { epoch, targets, built, durable: durable.map((c) => c.instance as Channel) };
    for (const c of built.channels.values()) await (c.instance as Channel).start();
    running = r;
    for (const runner of built.runners.values()) await runner.runner.start();
    for (const source of built.sources.values()) await source.runner.start();
    return r;
  }

  async function crash(r: Running): Promise<CrashRecord> {
    r.epoch.alive = false;
    for (const t of r.targets) t.dead = true;
    // A channel that keeps only part of its events (SPILLABLEMEMORY) says which it loses.
    const partial = new Map<number, number[]>();
    for (const c of r.built.channels.values()) {
      const lostOnCrash = c.model.definition.durability?.lostOnCrash;
      if (lostOnCrash) partial.set(channelIndex.get(c.model.name) as number, lostOnCrash(c.instance).map(simIdOf));
    }
    if (watch >= 0) {
      const i = watch;
      topo.channels.forEach((c, k) => {
        if (ledger.heldOf(k, i) === 0) return;
        const part = partial.get(k);
        if (part) note(part.includes(i) ? `CRASH: ${c.type} channel ${c.name} loses the events it holds in memory, this event with them` : `CRASH: it stays in the overflow on disk of ${c.type} channel ${c.name}`);
        else note(c.durable ? `CRASH: it stays in ${c.type} channel ${c.name}, which keeps committed events` : `CRASH: ${c.type} channel ${c.name} loses its contents, this event with them`);
      });
      note("process restarted");
    }
    const lost = ledger.crash(partial);
    recorder?.crash(partial);
    timeline.crash(clock.now());
    // What a killed process leaves: each channel's definition says (a file channel keeps its log and lets its locks go).
    for (const c of r.built.channels.values()) await c.model.definition.durability?.crash(c.instance);
    return { at: clock.now(), lost };
  }

  const peaks = topo.channels.map(() => 0);
  const fills = topo.channels.map(() => 0);
  const sample = (r: Running) => {
    for (let k = 0; k < r.targets.length; k++) {
      const f = r.targets[k].inner.counter.values.ChannelSize;
      fills[k] = f;
      if (f > peaks[k]) peaks[k] = f;
    }
    timeline.fill(clock.now(), fills);
  };
  const allClientsDone = () => {
    for (const c of clients.values()) if (!c.exhausted) return false;
    return true;
  };

  // Channels no sink reads can only keep their events: the run ends when the others are empty.
  const sinks = [...topo.model.sinks.values()];
  const read = topo.channels.map((c) => sinks.some((s) => s.channel === c.name));
  const drained = () => ledger.heldTotal === 0 || ledger.heldIn.every((n, k) => n === 0 || !read[k]);
  const crashes: CrashRecord[] = [];
  const crashTimes = [...o.crashAt];
  let current = await start();
  let completed = false;
  let steps = 0;
  let lastProgress = -1;
  for (;;) {
    await clock.flush();
    sample(current);
    if (allClientsDone() && drained()) {
      completed = true;
      break;
    }
    const next = clock.nextTimerAt();
    const crashAt = crashTimes[0];
    if (crashAt !== undefined && crashAt <= o.maxTime && (next === undefined || next >= crashAt)) {
      crashTimes.shift();
      await clock.advanceTo(crashAt);
      sample(current);
      crashes.push(await crash(current));
      current = await start();
      continue;
    }
    if (next === undefined || next > o.maxTime) break;
    await clock.step();
    if (hooks.onProgress && ++steps % 512 === 0 && stats.deliveries !== lastProgress) {
      lastProgress = stats.deliveries;
      hooks.onProgress({ time: clock.now(), produced: stats.produced, delivered: stats.deliveries, total: o.events });
    }
  }
  const end = clock.now();
  sample(current);
  current.epoch.alive = false;
  for (const t of current.targets) {
    t.dead = true;
    await t.inner.stop();
  }
  running = null;

  const summary = ledger.summary();
  const v = verdict(summary);
  const traceSummary = recorder?.finish();
  let firstLost: SimulationResult["firstLost"];
  const fl = ledger.firstLost();
  if (fl) firstLost = { id: Number(fl.id), channel: fl.channel, history: watch === Number(fl.id) ? history : [] };
  return {
    topology: topo.description,
    warnings: topo.warnings,
    events: o.events,
    seed: o.seed,
    produced: stats.produced,
    clientAccepted: stats.clientAccepted,
    summary,
    retries: [...clients.values()].reduce((n, c) => n + c.retries, 0),
    putFailures: stats.putFailures,
    sinkBatches: world.sinkBatches,
    sinkFailures: stats.sinkFailures,
    deliveries: stats.deliveries,
    crashes,
    channels: topo.channels.map((c, k) => ({ name: c.name, type: c.type, durable: c.durable, capacity: c.capacity, peak: peaks[k], end: fills[k] })),
    time: end,
    completed,
    verdict: v,
    firstLost,
    timeline,
    traceSummary,
  };
}

/**
 * Runs the simulation; when at-least-once was violated, runs it again with the same seed
 * watching the first lost event, to tell its story (a run is deterministic, so the second
 * run is the same run).
 */
export async function simulateWithHistory(o: SimulationOptions, hooks: SimulationHooks = {}): Promise<SimulationResult> {
  const result = await runSimulation(o, hooks);
  if (result.firstLost) {
    const again = await runSimulation(o, { watch: result.firstLost.id });
    result.firstLost.history = again.firstLost?.history ?? [];
  }
  return result;
}
