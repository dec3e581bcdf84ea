/**
 * What happened over virtual time, in a bounded number of buckets: when the run grows past
 * them, neighbouring buckets merge and each covers twice the time. Memory stays constant for
 * any number of events.
 */
export const MAX_BUCKETS = 1024;

export interface Bucket {
  /** Highest fill seen in the bucket, per channel. */
  fill: number[];
  delivered: number;
  sinkFailures: number;
  /** Put transactions refused by an injected fault (--fail-put). */
  putFailures: number;
  /** Put transactions the channel refused (full): the sender retries. */
  putRefusals: number;
  crashes: number;
}

export class Timeline {
  /** Milliseconds per bucket (a power of two). */
  width = 1;
  readonly buckets: Bucket[] = [];
  /** Last fill seen per channel, carried into buckets with no sample. */
  private last: number[];

  constructor(readonly channels: { name: string; capacity: number }[]) {
    this.last = channels.map(() => 0);
  }

  private at(t: number): Bucket {
    let i = Math.floor(t / this.width);
    while (i >= MAX_BUCKETS) {
      this.compact();
      i = Math.floor(t / this.width);
    }
    while (this.buckets.length <= i) this.buckets.push(emptyBucket([...this.last]));
    return this.buckets[i];
  }

  private compact(): void {
    const merged: Bucket[] = [];
    for (let i = 0; i < this.buckets.length; i += 2) {
      const a = this.buckets[i];
      const b = this.buckets[i + 1];
      if (!b) {
        merged.push(a);
        continue;
      }
      const m = emptyBucket(a.fill.map((f, k) => Math.max(f, b.fill[k])));
      addCounts(m, a);
      addCounts(m, b);
      merged.push(m);
    }
    this.buckets.length = 0;
    this.buckets.push(...merged);
    this.width *= 2;
  }

  fill(t: number, fills: number[]): void {
    const b = this.at(t);
    for (let k = 0; k < fills.length; k++) {
      if (fills[k] > b.fill[k]) b.fill[k] = fills[k];
      this.last[k] = fills[k];
    }
  }

  delivered(t: number, n: number): void {
    this.at(t).delivered += n;
  }
  sinkFailure(t: number): void {
    this.at(t).sinkFailures++;
  }
  putFailure(t: number): void {
    this.at(t).putFailures++;
  }
  putRefusal(t: number): void {
    this.at(t).putRefusals++;
  }
  crash(t: number): void {
    const b = this.at(t);
    b.crashes++;
    // The crash empties non-durable channels; the next sample says by how much.
  }

  /** The run up to `end` in `columns` equal slices (highest fill; sums of the counts). */
  columns(end: number, columns: number): Column[] {
    const span = Math.max(1, end);
    const cols: Column[] = [];
    for (let c = 0; c < columns; c++) {
      cols.push({ from: (span * c) / columns, to: (span * (c + 1)) / columns, ...emptyBucket(this.channels.map(() => 0)) });
    }
    for (let i = 0; i < this.buckets.length; i++) {
      const start = i * this.width;
      if (start > span) break;
      const b = this.buckets[i];
      const first = Math.min(columns - 1, Math.floor((start / span) * columns));
      const last = Math.min(columns - 1, Math.max(first, Math.ceil(((start + this.width) / span) * columns) - 1));
      addCounts(cols[first], b);
      for (let c = first; c <= last; c++) for (let k = 0; k < b.fill.length; k++) cols[c].fill[k] = Math.max(cols[c].fill[k], b.fill[k]);
    }
    return cols;
  }
}

/** A slice of the run for the report: a bucket's figures over [from, to). */
export interface Column extends Bucket {
  from: number;
  to: number;
}

function emptyBucket(fill: number[]): Bucket {
  return { fill, delivered: 0, sinkFailures: 0, putFailures: 0, putRefusals: 0, crashes: 0 };
}

/** Adds b's counts (not its fill: the caller keeps the highest) into `into`. */
function addCounts(into: Bucket, b: Bucket): void {
  into.delivered += b.delivered;
  into.sinkFailures += b.sinkFailures;
  into.putFailures += b.putFailures;
  into.putRefusals += b.putRefusals;
  into.crashes += b.crashes;
}
