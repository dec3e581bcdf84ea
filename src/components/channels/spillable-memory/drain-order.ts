/**
 * The order in which a spillable channel's events leave it, as runs over its two stores: a
 * positive run of n is the next n events of the memory queue, a negative run of -n the next n
 * events of the overflow. Each store is itself first in, first out, so the runs are all it takes
 * to keep one queue's order across both (Flume's DrainOrderQueue does the same).
 */
export type Store = "memory" | "overflow";

export class DrainOrder {
  private runs: number[] = [];
  private head = 0;
  /** Events in overflow runs. */
  overflowCount = 0;
  memoryCount = 0;

  get isEmpty(): boolean {
    return this.head === this.runs.length;
  }

  /** Where the next event is, or null when there is none. */
  front(): Store | null {
    if (this.isEmpty) return null;
    return this.runs[this.head] > 0 ? "memory" : "overflow";
  }

  /** Appends n events that went to a store. */
  pushBack(store: Store, n: number): void {
    if (n <= 0) return;
    const v = store === "memory" ? n : -n;
    const last = this.runs.length - 1;
    if (last >= this.head && Math.sign(this.runs[last]) === Math.sign(v)) this.runs[last] += v;
    else this.runs.push(v);
    this.count(store, n);
  }

  /** Puts n events back before the others (a rollback's takes, last run first). */
  pushFront(store: Store, n: number): void {
    if (n <= 0) return;
    const v = store === "memory" ? n : -n;
    if (!this.isEmpty && Math.sign(this.runs[this.head]) === Math.sign(v)) this.runs[this.head] += v;
    else if (this.head > 0) this.runs[--this.head] = v;
    else this.runs.unshift(v);
    this.count(store, n);
  }

  /** Removes the first event, which must be in `store`. */
  takeFront(store: Store): void {
    const v = this.runs[this.head];
    if (v === undefined || (v > 0) !== (store === "memory")) throw new Error(`drain order: the next event is not in the ${store}`);
    this.runs[this.head] = v > 0 ? v - 1 : v + 1;
    if (this.runs[this.head] === 0) this.head++;
    this.count(store, -1);
    // Keep the array from growing without bound in a long run.
    if (this.head > 1024 && this.head * 2 > this.runs.length) {
      this.runs = this.runs.slice(this.head);
      this.head = 0;
    }
  }

  /** True when no memory event comes before an overflow event (the memory part is the tail). */
  memoryIsTail(): boolean {
    let seenMemory = false;
    for (let i = this.head; i < this.runs.length; i++) {
      if (this.runs[i] > 0) seenMemory = true;
      else if (seenMemory) return false;
    }
    return true;
  }

  clear(): void {
    this.runs = [];
    this.head = 0;
    this.overflowCount = 0;
    this.memoryCount = 0;
  }

  private count(store: Store, n: number): void {
    if (store === "memory") this.memoryCount += n;
    else this.overflowCount += n;
  }
}
