/**
 * Why each duplicate happened. A duplicate is a delivery to a destination beyond the first of
 * an event from a channel; it comes from one of four things, each noticed where it happens:
 *
 * - partial-batch: a batch partly got through (a sink's destination got a prefix of it, or the
 *   next agent committed it into some of its channels and answered FAILED), then rolled back;
 * - lost-answer: the next agent committed a batch but its answer never arrived (lost on the
 *   link, a timeout, a reset), so the sender rolled back;
 * - crash-replay: an agent crashed with a take open on a durable channel whose events had
 *   already got through, and the channel gave them back (or a Kafka channel's committed take
 *   whose group offset could not move past a record another open take held);
 * - client-retry: a client resent a batch the source had committed;
 * - lost-ack: the Kafka broker wrote a batch whose acknowledgement was lost, so the sink rolled
 *   back and sent it again;
 * - leader-failover: a partition's leader failed over while a batch was written to it (the
 *   producer retried it to the new leader without idempotence, or gave up and the sink resent);
 * - source-reread: a Kafka source read again records whose batch it had committed into its
 *   channel but whose offsets it had not committed (a crash or a rebalance in between);
 * - hdfs-timeout: an HDFS write landed but answered after the sink's callTimeout, so the sink
 *   rolled back and wrote the batch again.
 *
 * When a batch got through and is rolled back (or replayed), its events are tagged with the
 * cause: a resend to the next agent tags the event (its next extra put into a channel takes
 * the tag), a redelivery from a channel tags the event in that channel (its next extra
 * delivery takes it). Copies travel: a duplicate copy forwarded to the next agent keeps its cause.
 */
import { grown } from "./grown.ts";
import type { LedgerHooks } from "./ledger.ts";

export const CAUSES = ["partial-batch", "lost-answer", "crash-replay", "client-retry", "lost-ack", "leader-failover", "source-reread", "hdfs-timeout"] as const;
export type Cause = (typeof CAUSES)[number];

export const CAUSE_TEXT: Record<Cause, string> = {
  "partial-batch": "a batch partly got through, then rolled back and was sent again",
  "lost-answer": "the next agent committed a batch whose answer was lost (dropped, timed out or reset), so it was sent again",
  "crash-replay": "a crash replayed a durable channel's take whose events had already got through (a take still open, or a Kafka channel's committed take whose offset waited behind a record another take held)",
  "client-retry": "a client resent a batch the source had already committed",
  "lost-ack": "the Kafka broker wrote a batch whose acknowledgement was lost, so the sink (or the Kafka channel's put) rolled back and sent it again",
  "leader-failover": "a partition leader failed over while a batch was written to it, and the batch was written again",
  "source-reread": "a Kafka source read again records it had committed into its channel before committing their offsets (crash or rebalance)",
  "hdfs-timeout": "an HDFS write landed but answered after the sink's callTimeout, so the batch was written again",
};

const CODE = Object.fromEntries(CAUSES.map((c, k) => [c, k + 1])) as Record<Cause, number>;
const UNEXPLAINED = CAUSES.length + 1;

export class DuplicateCauses implements LedgerHooks {
  /** Cause waiting for the resend of an event that got through to the next agent (0: none). */
  private pending: Uint8Array;
  /** Per channel: cause waiting for the redelivery of an event that got through to a destination. */
  private readonly redelivery: Uint8Array[];
  /** Cause of the latest extra copy of an event. */
  private last: Uint8Array;
  /** Per channel: cause of the latest extra copy it received. */
  private readonly copy: Uint8Array[];
  /** Latest commit sequence number that put the event anywhere. */
  private putSeq: Uint32Array;
  /** Cause of the latest duplicate delivery of an event. */
  private lastDuplicate: Uint8Array;
  private size: number;
  /** Commits with puts so far. */
  seq = 0;
  readonly counts: number[] = new Array(UNEXPLAINED + 1).fill(0);
  /** The first event each cause made a duplicate of. */
  readonly examples = new Map<Cause | "unexplained", number>();

  constructor(
    channels: number,
    sizeHint: number,
    /** Told of each duplicate (for event histories). */
    private readonly onDuplicate?: (ch: number, i: number, cause: Cause | "unexplained") => void,
    private readonly onExtraCopy?: (ch: number, i: number, cause: Cause) => void,
  ) {
    this.size = Math.max(16, sizeHint);
    this.pending = new Uint8Array(this.size);
    this.last = new Uint8Array(this.size);
    this.putSeq = new Uint32Array(this.size);
    this.lastDuplicate = new Uint8Array(this.size);
    this.copy = Array.from({ length: channels }, () => new Uint8Array(this.size));
    this.redelivery = Array.from({ length: channels }, () => new Uint8Array(this.size));
  }

  private ensure(i: number): void {
    if (i < this.size) return;
    let n = this.size;
    while (n <= i) n *= 2;
    this.pending = grown(this.pending, n);
    this.last = grown(this.last, n);
    this.putSeq = grown(this.putSeq, n);
    this.lastDuplicate = grown(this.lastDuplicate, n);
    for (let k = 0; k < this.copy.length; k++) this.copy[k] = grown(this.copy[k], n);
    for (let k = 0; k < this.redelivery.length; k++) this.redelivery[k] = grown(this.redelivery[k], n);
    this.size = n;
  }

  /** A commit put these events into a channel. */
  committedPuts(ids: ArrayLike<number>): void {
    const seq = ++this.seq;
    for (let k = 0; k < ids.length; k++) {
      const i = ids[k];
      if (i < 0) continue;
      this.ensure(i);
      this.putSeq[i] = seq;
    }
  }

  /** Whether event i was committed somewhere after commit number `seq`. */
  committedSince(i: number, seq: number): boolean {
    return i >= 0 && i < this.size && this.putSeq[i] > seq;
  }

  /** Event i got through to the next agent and will be sent again, because of `cause` (the first cause noticed wins). */
  gotThrough(i: number, cause: Cause): void {
    if (i < 0) return;
    this.ensure(i);
    if (this.pending[i] === 0) this.pending[i] = CODE[cause];
  }

  /** Event i reached the destination of channel ch's sink and will be delivered again, because of `cause`. */
  delivered(ch: number, i: number, cause: Cause): void {
    if (i < 0) return;
    this.ensure(i);
    if (this.redelivery[ch][i] === 0) this.redelivery[ch][i] = CODE[cause];
  }

  extraPut(ch: number, i: number): void {
    this.ensure(i);
    const c = this.pending[i] || this.last[i] || CODE["client-retry"];
    this.pending[i] = 0;
    this.copy[ch][i] = c;
    this.last[i] = c;
    this.onExtraCopy?.(ch, i, CAUSES[c - 1]);
  }

  /** A duplicate delivery of event i is no more (the Kafka broker lost that copy): its cause counts one less. */
  withdrawDuplicate(i: number): void {
    const c = i < this.size ? this.lastDuplicate[i] : 0;
    if (c > 0) this.counts[c]--;
  }

  extraDelivery(ch: number, i: number, extraCopy: boolean): void {
    this.ensure(i);
    let c = extraCopy ? this.copy[ch][i] : 0;
    if (c === 0) {
      c = this.redelivery[ch][i] || this.copy[ch][i] || UNEXPLAINED;
      this.redelivery[ch][i] = 0;
    }
    this.counts[c]++;
    this.lastDuplicate[i] = c;
    const cause = c === UNEXPLAINED ? "unexplained" : CAUSES[c - 1];
    if (!this.examples.has(cause)) this.examples.set(cause, i);
    this.onDuplicate?.(ch, i, cause);
  }

  count(cause: Cause): number {
    return this.counts[CODE[cause]];
  }

  get unexplained(): number {
    return this.counts[UNEXPLAINED];
  }
}
