/**
 * The records a Kafka source or channel could not read as events, remembered while the batch or
 * take holding them is read again (its dead letters refused, the channel full, a rollback): each
 * is logged, counted and dead-lettered once however often it is read, so a retry logs only why
 * its batch is held. Only bad records are keyed (rare), never the good ones.
 */
import type { KafkaMessage } from "./consumer.ts";
import type { KafkaBadRecordError } from "./errors.ts";
import type { BadRecordHandler } from "./records.ts";

export class BadRecordsSeen {
  /** "topic/partition/offset" -> whether it went on (dead-lettered, counted) or was only logged so far. */
  private readonly seen = new Map<string, boolean>();

  /**
   * A bad record read: hands it to `deadLetter` unless it went there already; returns false when
   * it was reported before (eventOfRecord then does not log it again).
   */
  report(m: KafkaMessage, error: KafkaBadRecordError, deadLetter?: BadRecordHandler): boolean {
    const key = `${m.topic}/${m.partition}/${m.offset}`;
    const wentOn = this.seen.get(key);
    if (wentOn === undefined) this.seen.set(key, false);
    if (wentOn !== true) deadLetter?.(m, error);
    return wentOn === undefined;
  }

  /** The bad records read so far went on (their dead letters were acknowledged): how many did now, each counted once. */
  settle(): number {
    let n = 0;
    for (const [key, wentOn] of this.seen) {
      if (wentOn) continue;
      this.seen.set(key, true);
      n++;
    }
    return n;
  }

  /** A record's offset is committed: it is not read again. */
  forget(m: KafkaMessage): void {
    if (this.seen.size > 0) this.seen.delete(`${m.topic}/${m.partition}/${m.offset}`);
  }

  /** Records dropped unread (a rebalance): whoever owns their partitions now reads them again, and reports them anew. */
  forgetAll(records: readonly KafkaMessage[]): void {
    if (this.seen.size === 0) return;
    for (let i = 0; i < records.length; i++) this.forget(records[i]);
  }

  /** Everything read is committed, or a new consumer starts from the committed offsets. */
  clear(): void {
    this.seen.clear();
  }
}
