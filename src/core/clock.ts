/**
 * Time for the core. Components never read the wall clock or schedule timers directly, so
 * the simulator can drive the exact same code on virtual time.
 */
export interface TimerHandle {
  readonly id: number;
}

export interface Clock {
  /** Milliseconds since the epoch (real or virtual). */
  now(): number;
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
  /** Resolves after ms milliseconds of this clock's time. */
  sleep(ms: number): Promise<void>;
  /**
   * Runs fn on the next turn of the event loop, after the work already queued (promise
   * continuations included). Absent: a 0 ms timer of this clock.
   */
  defer?(fn: () => void): void;
}

interface HostTimers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  /** Bun, Node and Deno have it; a 0 ms timer waits at least 1 ms in Bun and Node. */
  setImmediate?(fn: () => void): unknown;
}

/** The process clock: Date.now and the host's timers. */
export class SystemClock implements Clock {
  private readonly host = globalThis as unknown as HostTimers;
  private readonly handles = new Map<number, unknown>();
  private nextId = 1;

  now(): number {
    return Date.now();
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const id = this.nextId++;
    const handle = this.host.setTimeout(() => {
      this.handles.delete(id);
      fn();
    }, ms);
    this.handles.set(id, handle);
    return { id };
  }

  clearTimeout(timer: TimerHandle): void {
    const handle = this.handles.get(timer.id);
    if (handle !== undefined) {
      this.host.clearTimeout(handle);
      this.handles.delete(timer.id);
    }
  }

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.setTimeout(resolve, ms));
  }

  defer(fn: () => void): void {
    if (this.host.setImmediate) this.host.setImmediate(fn);
    else this.host.setTimeout(fn, 0);
  }
}

export const systemClock: Clock = new SystemClock();
