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
}

interface HostTimers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
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
}

export const systemClock: Clock = new SystemClock();
