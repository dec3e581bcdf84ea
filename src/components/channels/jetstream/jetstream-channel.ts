/**
 * A channel kept in a NATS JetStream stream (Flume's KafkaChannel, on JetStream): several
 * agents naming the same stream and consumer share one replicated, durable channel.
 *
 * Put: events are buffered in the transaction; commit publishes them, by default as batch
 * messages (framing = batch: as few messages as max_payload allows, see nats/batch-frame.ts;
 * framing = event: one message per event), with message ids (<channel instance>.<transaction>.
 * <index or event range>) and returns once the stream acknowledged every one, so they become
 * visible to takers only at commit, and a publish retried inside the commit is not stored
 * twice (the stream's duplicate window drops it).
 * Take: events come from a durable pull consumer shared by every agent (competing
 * consumers), prefetched so that take() is synchronous; a message is acknowledged once every
 * event in it has been committed, whatever the take batches (nats/event-cursor.ts); rollback
 * puts the events back at the head in their order (as Flume's Kafka channel seeks back).
 *
 * Capacity is the backlog (events stored and not yet taken by a committed transaction, over
 * every agent), known from this channel's own commits and the messages it holds at once, and
 * from the server every second (which counts messages: those not here are counted with the
 * events per message seen so far until they arrive). A commit that would exceed it waits up
 * to keep-alive, in arrival order, then fails with ChannelFullException having published
 * nothing. The stream itself is created with
 * room for one more transaction (max-msgs = capacity + transactionCapacity), so a
 * transaction's puts fit before its takes are acknowledged.
 *
 * A killed agent leaves its taken and prefetched events unacknowledged; the server delivers
 * them again after ack-wait, a batch message whole (with its events already committed).
 */
import { randomBytes } from "node:crypto";
import type { ConsumerInfo, JsMsg, StreamInfo } from "@nats-io/jetstream";
import type { Channel } from "../../../core/channel.ts";
import type { Clock, TimerHandle } from "../../../core/clock.ts";
import { systemClock } from "../../../core/clock.ts";
import { ChannelException, ChannelFullException } from "../../../core/errors.ts";
import type { Event } from "../../../core/event.ts";
import type { LifecycleState } from "../../../core/lifecycle.ts";
import { type Logger, silentLogger } from "../../../core/logger.ts";
import { PutListeners } from "../../../core/put-listeners.ts";
import { Permits } from "../../../core/permits.ts";
import { ChannelTransaction } from "../../../core/transaction.ts";
import { type NatsClients, NatsLink } from "../../../nats/connection.ts";
import { AcksNotSentError, messageOf, StreamFullError } from "../../../nats/errors.ts";
import { FrameScratch } from "../../../nats/batch-frame.ts";
import { EventCursor, eventsIn, Takes } from "../../../nats/event-cursor.ts";
import { batchMessages, perEventMessages, publishBatch } from "../../../nats/publish.ts";
import { Puller } from "../../../nats/puller.ts";
import type { ConnectionSettings, ConsumerSettings, StreamSettings } from "../../../nats/settings.ts";
import { ensureConsumer, ensureStream } from "../../../nats/stream.ts";
import { JetStreamChannelCounter } from "./counter.ts";

export interface JetStreamChannelOptions {
  connection: ConnectionSettings;
  stream: StreamSettings;
  consumer: ConsumerSettings;
  /** Most events in the backlog (the stream's max-msgs is a backstop above it). */
  capacity: number;
  transactionCapacity: number;
  /** Events pulled ahead of takes (0: transactionCapacity). */
  prefetch: number;
  /** Seconds a commit waits for room in a full stream. */
  keepAlive: number;
  /** Milliseconds a commit keeps retrying through reconnects and leader elections. */
  commitTimeout: number;
  /** Milliseconds one pull request waits on the server (long poll). */
  pullExpires?: number;
  /** batch: a commit's puts in as few messages as fit; event: one message per event. */
  framing: Framing;
}

export type Framing = "batch" | "event";

/** How often the backlog (ChannelSize, room for commits) is read from the server. */
const SIZE_REFRESH_MS = 1000;

export class JetStreamTransaction extends ChannelTransaction {
  puts: Event[] = [];
  readonly takes = new Takes();
  /** Message ids of this transaction's puts, fixed at the first commit so a retried commit reuses them. */
  txKey: string | null = null;

  constructor(protected readonly ch: JetStreamChannel) {
    super();
  }
}

export class JetStreamChannel implements Channel {
  readonly durable = true;
  readonly counter: JetStreamChannelCounter;
  private state: LifecycleState = "IDLE";
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly link: NatsLink;
  private readonly puller: Puller;
  private readonly cursor: EventCursor;
  /** Where batch messages are encoded (one commit's at a time; others get buffers of their own). */
  private readonly scratch = new FrameScratch();
  /** Unique per channel instance, so message ids never collide across agents or restarts. */
  private readonly idPrefix = randomBytes(9).toString("base64url");
  private nextTx = 1;
  private sizeTimer: TimerHandle | null = null;
  private readonly putListeners = new PutListeners();
  /** Room in the backlog: capacity less the events known to be stored and not yet taken for good. */
  private readonly room: Permits;
  /** Network operations in flight (publishes, acks, backlog reads). */
  private inflight = 0;
  /** Commits started or finished since a backlog read was sent (a read that saw neither is current). */
  private commits = 0;
  /** Events the server has for the consumer that may still arrive here (see ioBusy). */
  private owed = 0;
  /** Events held by open transactions at the last commit or rollback (ChannelSize is set as of then). */
  private heldAtLastMark = 0;
  /** Events in the backlog: stored and not committed by a take (the room is capacity less these and reservations). */
  private backlog = 0;
  /** Of the backlog, events in messages not here (on their way, with other agents, not yet delivered); exact for this channel's own. */
  private away = 0;
  /** Messages not here, as far as known (the server's count at each read). */
  private awayMsgs = 0;
  /** Events and messages seen (published or arrived): the mean estimates what other agents' messages carry. */
  private seenEvents = 0;
  private seenMsgs = 0;
  /** Events of commits publishing now. */
  private publishing = 0;
  /**
   * Commits publishing now, by transaction key, with their messages that arrived before the commit
   * counted them: an arrival is matched to its commit by its message id, since concurrent commits'
   * messages may arrive in any order.
   */
  private readonly early = new Map<string, { events: number; msgs: number }>();

  constructor(
    readonly name: string,
    readonly options: JetStreamChannelOptions,
    deps: { clock?: Clock; logger?: Logger } = {},
  ) {
    this.clock = deps.clock ?? systemClock;
    this.logger = deps.logger ?? silentLogger;
    this.counter = new JetStreamChannelCounter(name, this.clock);
    this.counter.set("ChannelCapacity", options.capacity);
    this.room = new Permits(options.capacity, this.clock);
    const label = `jetstream channel ${name}`;
    this.link = new NatsLink(label, options.connection, (clients) => this.setup(clients), this.clock, this.logger);
    this.puller = new Puller(
      this.link,
      {
        stream: options.stream.stream,
        consumer: options.consumer.consumer,
        prefetch: options.prefetch > 0 ? options.prefetch : options.transactionCapacity,
        ackWait: options.consumer.ackWait,
        expires: options.pullExpires ?? 1000,
      },
      this.clock,
      this.logger,
      {
        arrived: (first, m) => {
          // May go below zero for a moment: a message can arrive before its commit has counted it.
          this.owed--;
          if (m !== null) this.arrivedHere(eventsIn(m), m);
          if (first) this.putListeners.notify();
        },
        handedBack: (msgs) => {
          this.owed += msgs.length;
          for (let i = 0; i < msgs.length; i++) {
            this.away += eventsIn(msgs[i]);
            this.awayMsgs++;
          }
        },
      },
    );
    this.cursor = new EventCursor(this.puller, this.logger, label);
  }

  /** Moves the backlog by n events, and the room the other way. */
  private grow(n: number): void {
    this.backlog += n;
    if (n > 0) this.room.reduce(n);
    else if (n < 0) this.room.release(-n);
  }

  /** A message of n events arrived: they leave `away`; what the estimate missed joins the backlog. */
  private arrivedHere(n: number, m: JsMsg): void {
    this.seenEvents += n;
    this.seenMsgs++;
    if (this.early.size > 0) {
      const id = m.headers?.get("Nats-Msg-Id") ?? "";
      const mine = this.early.get(id.slice(0, id.lastIndexOf(".")));
      if (mine) {
        // Stored by a commit of this channel still in flight: it counts them when it returns.
        mine.events += n;
        mine.msgs++;
        return;
      }
    }
    const known = Math.min(this.away, n);
    this.away -= known;
    let delta = n - known;
    if (this.awayMsgs > 0) this.awayMsgs--;
    // Nothing more is on its way: what is left of an estimate was too much.
    if (this.awayMsgs === 0) {
      delta -= this.away;
      this.away = 0;
    }
    this.grow(delta);
  }

  /** Committed events whose batch messages are not acknowledged yet: a crash or stop now delivers them again. */
  repeatsOnRestart(): Event[] {
    return this.cursor.repeatsOnRestart();
  }

  get label(): string {
    return this.link.label;
  }

  getLifecycleState(): LifecycleState {
    return this.state;
  }

  getTransaction(): JetStreamTransaction {
    return new JetStreamTransaction(this);
  }

  getTransactionCapacity(): number {
    return this.options.transactionCapacity;
  }

  /** Wakes sink runners when prefetched events arrive (see Channel.onPutsCommitted). */
  onPutsCommitted(listener: () => void): () => void {
    return this.putListeners.add(listener);
  }

  /**
   * True while a publish, an acknowledgement or a backlog read is in flight, or while events
   * the server has for the consumer are still on their way into the prefetch (the simulator
   * and the conformance suite wait for it before moving virtual time). Exact when this channel
   * is the consumer's only user; with other agents it may stay true until a backlog read.
   */
  ioBusy(): boolean {
    return this.inflight > 0 || (this.owed > 0 && this.puller.pulling);
  }

  /** True once connected to NATS with the stream and consumer in place. */
  get connected(): boolean {
    return this.link.ready;
  }

  /** Events pulled from the server and not yet taken. */
  get prefetched(): number {
    return this.cursor.available;
  }

  /** Starts connecting; a server that is down is retried in the background (logged), never fatal. */
  start(): void {
    if (this.state === "START") return;
    this.counter.start();
    this.state = "START";
    this.link.open();
  }

  /** Stops pulling, hands prefetched and held events back to the stream, and closes the connection. */
  async stop(): Promise<void> {
    if (this.state !== "START") return;
    this.state = "STOP";
    this.stopTimers();
    await this.puller.stop();
    this.cursor.clear();
    await this.link.close();
    this.counter.connected = false;
    this.counter.stop();
  }

  /**
   * What a killed process leaves: the connection drops with nothing acknowledged or handed
   * back; the server delivers this channel's prefetched and taken events again after ack-wait.
   */
  async crash(): Promise<void> {
    if (this.state !== "START") return;
    this.state = "STOP";
    this.stopTimers();
    this.puller.crash();
    this.cursor.clear();
    await this.link.crash();
    this.counter.connected = false;
    this.counter.stop();
  }

  private stopTimers(): void {
    if (this.sizeTimer) this.clock.clearTimeout(this.sizeTimer);
    this.sizeTimer = null;
  }

  private async setup({ jsm, mod }: NatsClients): Promise<void> {
    const o = this.options;
    const stream = await ensureStream(jsm, mod, o.stream, { label: this.label, logger: this.logger, publishes: true });
    const consumer = await ensureConsumer(jsm, mod, o.stream.stream, o.consumer, { label: this.label, logger: this.logger });
    this.counter.connected = true;
    this.backlogRead(stream, consumer);
    if (this.state === "START") {
      this.puller.start();
      this.scheduleSizeRead(SIZE_REFRESH_MS);
    }
  }

  private scheduleSizeRead(ms: number): void {
    if (this.sizeTimer || this.state !== "START") return;
    this.sizeTimer = this.clock.setTimeout(() => {
      this.sizeTimer = null;
      void this.readBacklog().finally(() => this.scheduleSizeRead(SIZE_REFRESH_MS));
    }, ms);
  }

  /** Reads the shared backlog from the server: ChannelSize, and room others made or took. */
  private async readBacklog(): Promise<void> {
    const jsm = this.link.ready ? this.link.jsm : null;
    if (!jsm) return;
    const commitsBefore = this.commits;
    this.inflight++;
    try {
      const { stream, consumer } = this.options;
      const [s, c] = await Promise.all([jsm.streams.info(stream.stream), jsm.consumers.info(stream.stream, consumer.consumer)]);
      this.counter.connected = true;
      // A commit that ran meanwhile may or may not be in the answer: the next read settles it.
      if (this.commits === commitsBefore && this.inflight === 1) this.backlogRead(s, c);
    } catch {
      this.counter.connected = this.link.ready;
    } finally {
      this.inflight--;
    }
  }

  /** Takes the backlog the server reported as the truth: room for commits, ChannelSize, events owed. */
  private backlogRead(stream: StreamInfo, consumer: ConsumerInfo): void {
    const undelivered = consumer.num_pending;
    const unacked = consumer.num_ack_pending;
    // A work queue holds exactly the messages not yet taken for good; the consumer's counts can
    // count a message twice for a moment (nats-server 2.9, after a nak), the stream's cannot.
    const messages = this.options.stream.retention === "workqueue" ? stream.state.messages : undelivered + unacked;
    const here = this.puller.buffered + this.puller.heldCount;
    // Messages the server has that are not here; the events in them are exact for those this
    // channel published or handed back, estimated for others' (corrected as they arrive).
    const awayMsgs = Math.max(0, messages - here);
    if (awayMsgs !== this.awayMsgs) {
      const perMessage = this.seenMsgs > 0 ? Math.max(1, this.seenEvents / this.seenMsgs) : 1;
      const away = awayMsgs === 0 ? 0 : Math.max(awayMsgs, Math.round(this.away + (awayMsgs - this.awayMsgs) * perMessage));
      this.grow(away - this.away);
      this.away = away;
      this.awayMsgs = awayMsgs;
    }
    this.counter.values.ChannelSize = Math.max(0, this.backlog - this.heldAtLastMark);
    // What is undelivered, plus what is delivered and not here (on its way, coming back after
    // ack-wait, or with another agent: then this overcounts until that agent commits).
    this.owed = Math.min(undelivered + Math.max(0, unacked - here), awayMsgs);
  }

  /** ChannelSize as Flume sets it, at each commit and rollback: the backlog less what open transactions hold. */
  private markSize(): void {
    const held = this.cursor.held;
    this.heldAtLastMark = held;
    this.counter.values.ChannelSize = Math.max(0, this.options.capacity - this.room.free - held);
  }

  // ---- transaction operations ----

  put(tx: JetStreamTransaction, event: Event): void {
    this.counter.values.EventPutAttemptCount++;
    if (tx.puts.length >= this.options.transactionCapacity) {
      throw new ChannelException(
        `Put queue for JetStreamTransaction of capacity ${this.options.transactionCapacity} full, consider committing more frequently or increasing transactionCapacity (channel ${this.name})`,
      );
    }
    tx.puts.push(event);
  }

  take(tx: JetStreamTransaction): Event | null {
    this.counter.values.EventTakeAttemptCount++;
    if (tx.takes.count >= this.options.transactionCapacity) {
      throw new ChannelException(
        `Take list for JetStreamTransaction, capacity ${this.options.transactionCapacity} full, consider committing more frequently or increasing transactionCapacity (channel ${this.name})`,
      );
    }
    return this.cursor.take(tx.takes) ?? null;
  }

  async commit(tx: JetStreamTransaction): Promise<void> {
    const puts = tx.puts.length;
    const takes = tx.takes.count;
    if (puts === 0 && takes === 0) {
      this.markSize();
      return;
    }
    if (this.state !== "START") throw new ChannelException(`${this.label} is not started (state ${this.state})`);
    this.commits++;
    // Room for the net puts, reserved in arrival order (takes of the same transaction give theirs back).
    const reserved = Math.max(0, puts - takes);
    const waitMs = this.options.keepAlive * 1000;
    const started = this.clock.now();
    let got = this.room.tryAcquire(reserved, waitMs);
    if (typeof got !== "boolean") got = await got;
    if (!got) {
      throw new ChannelFullException(
        `Space for commit to the stream couldn't be acquired. Sinks are likely not keeping up with sources, or the capacity is too tight (channel ${this.name}, stream ${this.options.stream.stream}, capacity ${this.options.capacity})`,
      );
    }
    let stored = 0;
    let storedMsgs = 0;
    let acked = 0;
    const txKey = puts > 0 ? (tx.txKey ??= `${this.idPrefix}.${this.nextTx++}`) : "";
    const arrivedEarly = { events: 0, msgs: 0 };
    if (puts > 0) this.early.set(txKey, arrivedEarly);
    this.inflight++;
    this.publishing += puts;
    try {
      if (puts > 0) {
        storedMsgs = await this.publishPuts(tx, Math.max(0, waitMs - (this.clock.now() - started)));
        stored = puts;
      }
      if (takes > 0) {
        await this.ackTakes(tx);
        acked = takes;
      }
    } finally {
      this.inflight--;
      this.commits++;
      this.publishing -= puts;
      if (puts > 0) this.early.delete(txKey);
      // Of what was stored, the messages that arrived already are here, the others away.
      const early = Math.min(arrivedEarly.events, stored);
      const earlyMsgs = Math.min(arrivedEarly.msgs, storedMsgs);
      // Arrived though the commit failed (stored in part before the failure): backlog all the same.
      const strangers = arrivedEarly.events - early;
      // The backlog moved by what was stored less what was committed; the reservation is
      // given back in the same step, so no waiting commit gets room that is not there.
      this.backlog += stored - acked + strangers;
      this.away += stored - early;
      this.awayMsgs += storedMsgs - earlyMsgs;
      this.seenEvents += stored;
      this.seenMsgs += storedMsgs;
      const delta = stored - acked - reserved + strangers;
      if (delta > 0) this.room.reduce(delta);
      else if (delta < 0) this.room.release(-delta);
      this.owed += storedMsgs;
      this.markSize();
    }
  }

  /** Publishes a transaction's puts; returns the messages they went in. */
  private async publishPuts(tx: JetStreamTransaction, fullWait: number): Promise<number> {
    const c = this.counter.values;
    const txKey = (tx.txKey ??= `${this.idPrefix}.${this.nextTx++}`);
    const target = { subject: this.options.stream.subject, stream: this.options.stream.stream, timeout: this.options.commitTimeout, fullWait };
    let build;
    if (this.options.framing === "batch") {
      build = batchMessages(target, tx.puts, (_k, from, to) => `${txKey}.${from}-${to}`, this.scratch);
    } else {
      const ids = new Array<string>(tx.puts.length);
      for (let i = 0; i < ids.length; i++) ids[i] = `${txKey}.${i}`;
      build = perEventMessages(target, tx.puts, ids);
    }
    const started = this.clock.now();
    let messages: number;
    let acknowledged = false;
    try {
      const r = await publishBatch(this.link, target, build, this.clock);
      acknowledged = true;
      messages = r.messages;
      c["channel.jetstream.publish.retry.count"] += r.retries;
      c["channel.jetstream.publish.duplicate.count"] += r.duplicates;
    } catch (err) {
      if (err instanceof StreamFullError) throw new ChannelFullException(`${this.label}: ${err.message}`, { cause: err });
      throw new ChannelException(`${this.label}: commit of ${tx.puts.length} events failed: ${messageOf(err)}`, { cause: err });
    } finally {
      this.scratch.giveBack(acknowledged);
      c["channel.jetstream.event.send.time"] += this.clock.now() - started;
    }
    c.EventPutSuccessCount += tx.puts.length;
    tx.puts = [];
    tx.txKey = null;
    return messages;
  }

  private async ackTakes(tx: JetStreamTransaction): Promise<void> {
    const c = this.counter.values;
    const started = this.clock.now();
    const n = tx.takes.count;
    // Only messages all of whose events are now committed are acknowledged.
    const done = this.cursor.commit(tx.takes);
    try {
      if (done.length > 0) await this.puller.ack(done, this.options.commitTimeout);
    } catch (err) {
      if (err instanceof AcksNotSentError) throw new ChannelException(`${this.label}: take commit failed: ${err.message}`, { cause: err });
      // Sent and not confirmed (a leader change, a server too busy to answer): the server may
      // have applied them. Failing the take would let the sink drop a batch that would then
      // never come again; committed, it comes again only if the acks were lost (after ack-wait).
      c["channel.jetstream.commit.unconfirmed.count"]++;
      this.logger.warn(`${this.label}: the NATS server did not confirm the acknowledgements of a take of ${n} event(s) within ${this.options.commitTimeout} ms (commit-timeout): ${messageOf(err)}; the take is committed, and its events are delivered again after ack-wait if the acknowledgements were lost`);
    } finally {
      c["channel.jetstream.commit.time"] += this.clock.now() - started;
    }
    c.EventTakeSuccessCount += n;
  }

  rollback(tx: JetStreamTransaction): void {
    if (tx.takes.count > 0) this.cursor.rollback(tx.takes);
    tx.puts = [];
    tx.txKey = null;
    this.counter.values["channel.rollback.count"]++;
    this.markSize();
  }
}
