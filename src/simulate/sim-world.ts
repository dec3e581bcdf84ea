/**
 * The world simulated sources, sinks and clients report to (SimWorld): each report moves the
 * run's figures, its ledger, its trace and the histories of watched events.
 */
import type { Clock } from "../core/clock.ts";
import type { AgentState, OpenTx, SinkInfo } from "./agent-state.ts";
import type { DuplicateCauses } from "./causes.ts";
import type { SimWorld } from "./components.ts";
import type { EventNotes } from "./event-notes.ts";
import type { Ledger } from "./ledger.ts";
import type { SimulationOptions } from "./options.ts";
import type { TracedTransaction, TraceRecorder } from "./trace.ts";

/** What of the simulation the world reports to. */
export interface WorldHost {
  o: SimulationOptions;
  stats: { produced: number; clientAccepted: number; deliveries: number; sinkBatches: number };
  notes: EventNotes;
  ledger: Ledger;
  causes: DuplicateCauses;
  recorder: TraceRecorder | null;
  clock: Clock;
  open: ReadonlyMap<TracedTransaction, OpenTx>;
  sinks: ReadonlyMap<string, SinkInfo>;
}

/** Random sources all agents' simulated sinks share, so a run is the same for the same seed. */
export interface SharedRandoms {
  sinkRandom: () => number;
  partialRandom: () => number;
}

/** The world of agent a. */
export function simWorld(sim: WorldHost, a: AgentState, shared: SharedRandoms): SimWorld {
  const o = sim.o;
  return {
    sinkFail: o.failSink,
    sinkRandom: shared.sinkRandom,
    partialRandom: shared.partialRandom,
    get sinkBatches() {
      return sim.stats.sinkBatches;
    },
    set sinkBatches(n: number) {
      sim.stats.sinkBatches = n;
    },
    produced(ids, by, client) {
      sim.stats.produced += ids.length;
      sim.notes.eachWatchedId(ids, (id) => sim.notes.say(id, a.name, `produced by ${client ?? `the client of source ${by}`} (batch of ${ids.length})`));
    },
    accepted(ids, by, client) {
      sim.stats.clientAccepted += ids.length;
      sim.notes.eachWatchedId(ids, (id) => sim.notes.say(id, a.name, client ? `${by} acknowledged the batch to ${client}` : `source ${by} acknowledged the batch to its client`));
    },
    putFailed(ids, by, err) {
      sim.notes.eachWatchedId(ids, (id) => sim.notes.say(id, a.name, `source ${by} could not put the batch (${err.message}); the client will retry`));
    },
    delivered(tx, by, ids) {
      sim.stats.deliveries += ids.length;
      sim.notes.eachWatchedId(ids, (id) => sim.notes.say(id, a.name, `delivered by sink ${by} (tx ${tx.id})`));
      sim.ledger.delivered(tx.target.index, ids);
      sim.recorder?.deliver(tx, by, ids);
      a.timeline.delivered(sim.clock.now(), ids.length);
      sim.open.get(tx)?.delivered.push(...ids);
      const sink = sim.sinks.get(`${a.name}/${by}`);
      if (sink) sink.result.delivered += ids.length;
    },
    wrote(tx, by, ids, hop, where) {
      sim.notes.eachWatchedId(ids, (id) => sim.notes.say(id, a.name, `sink ${by} wrote it to ${where} (tx ${tx.id})`));
      if (!hop) return this.delivered(tx, by, ids);
      sim.ledger.forwarded(tx.target.index, ids);
      sim.recorder?.forward(tx.target.index, ids);
      a.timeline.delivered(sim.clock.now(), ids.length);
      sim.open.get(tx)?.wrote.push(...ids);
      const sink = sim.sinks.get(`${a.name}/${by}`);
      if (sink) sink.result.forwarded += ids.length;
    },
    resendTag(tx, ids, cause, hop) {
      if (hop) for (const id of ids) sim.causes.gotThrough(id, cause);
      else if (tx) for (const id of ids) sim.causes.delivered(tx.target.index, id, cause);
    },
    brokerLost(ch, ids, counted, where) {
      sim.notes.eachWatchedId(ids, (id) => sim.notes.say(id, a.name, `LOST in ${where}: its leader had acknowledged the record and failed over before a follower had it (acks 0 or 1)`));
      sim.ledger.lostInBroker(ch, ids, counted);
      sim.recorder?.brokerLost(ch, ids, counted);
      for (const id of ids) if (counted === "delivered" && sim.ledger.deliveredOf(ch, id) > 0) sim.causes.withdrawDuplicate(id);
    },
    landed(ch, ids, cause, where) {
      sim.notes.eachWatchedId(ids, (id) => sim.notes.say(id, a.name, `written to ${where}, in channel ${sim.ledger.channels[ch].name} without a commit counting it (${cause})`));
      for (const id of ids) sim.causes.gotThrough(id, cause);
      sim.causes.committedPuts(ids);
      sim.ledger.committed(ch, ids, []);
      sim.recorder?.landed(ch, ids, cause);
    },
    say(ids, text) {
      sim.notes.eachWatchedId(ids, (id) => sim.notes.say(id, a.name, text));
    },
    sinkFailed(tx, by, batch, reached, size) {
      a.sinkFailures++;
      a.timeline.sinkFailure(sim.clock.now());
      sim.notes.eachWatched(tx.takes, (id) => sim.notes.say(id, a.name, `sink ${by} failed batch ${batch} after ${reached} of ${size} events got through; tx ${tx.id} rolls back`));
    },
  };
}
