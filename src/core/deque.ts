/**
 * A growable ring-buffer deque. Array.shift is O(n) on V8 for deep queues; this is O(1) at
 * both ends, and it never shrinks its storage below what it has needed, so a steady pipeline
 * allocates nothing.
 */
export class Deque<T> {
  private items: (T | undefined)[];
  private head = 0;
  private count = 0;
  private mask: number;

  constructor(initialCapacity = 16) {
    let cap = 16;
    while (cap < initialCapacity) cap *= 2;
    this.items = new Array(cap);
    this.mask = cap - 1;
  }

  get length(): number {
    return this.count;
  }

  pushBack(item: T): void {
    if (this.count === this.items.length) this.grow();
    this.items[(this.head + this.count) & this.mask] = item;
    this.count++;
  }

  /** pushBack of each item in order, the room made once. */
  pushBackAll(items: readonly T[]): void {
    const n = items.length;
    while (this.count + n > this.items.length) this.grow();
    const slots = this.items;
    const mask = this.mask;
    const at = this.head + this.count;
    for (let i = 0; i < n; i++) slots[(at + i) & mask] = items[i];
    this.count += n;
  }

  pushFront(item: T): void {
    if (this.count === this.items.length) this.grow();
    this.head = (this.head - 1) & this.mask;
    this.items[this.head] = item;
    this.count++;
  }

  popFront(): T | undefined {
    if (this.count === 0) return undefined;
    const item = this.items[this.head];
    this.items[this.head] = undefined;
    this.head = (this.head + 1) & this.mask;
    this.count--;
    return item;
  }

  /** popFront up to max times, each item pushed onto out; returns how many. */
  popFrontInto(out: T[], max: number): number {
    const n = Math.min(max, this.count);
    const slots = this.items;
    const mask = this.mask;
    let head = this.head;
    for (let i = 0; i < n; i++) {
      out.push(slots[head] as T);
      slots[head] = undefined;
      head = (head + 1) & mask;
    }
    this.head = head;
    this.count -= n;
    return n;
  }

  popBack(): T | undefined {
    if (this.count === 0) return undefined;
    const index = (this.head + this.count - 1) & this.mask;
    const item = this.items[index];
    this.items[index] = undefined;
    this.count--;
    return item;
  }

  peekFront(): T | undefined {
    return this.count === 0 ? undefined : this.items[this.head];
  }

  /** The item at position i from the front (0 = front). */
  at(i: number): T | undefined {
    if (i < 0 || i >= this.count) return undefined;
    return this.items[(this.head + i) & this.mask];
  }

  clear(): void {
    this.items.fill(undefined);
    this.head = 0;
    this.count = 0;
  }

  *[Symbol.iterator](): IterableIterator<T> {
    for (let i = 0; i < this.count; i++) yield this.items[(this.head + i) & this.mask] as T;
  }

  toArray(): T[] {
    return [...this];
  }

  private grow(): void {
    const old = this.items;
    const next = new Array<T | undefined>(old.length * 2);
    for (let i = 0; i < this.count; i++) next[i] = old[(this.head + i) & this.mask];
    this.items = next;
    this.head = 0;
    this.mask = next.length - 1;
  }
}
