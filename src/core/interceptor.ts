import type { Event } from "./event.ts";

/**
 * Changes or drops events between a source and its channels (Flume's Interceptor).
 * intercept returns null to drop the event; interceptAll returns the events to keep.
 */
export interface Interceptor {
  readonly name?: string;
  initialize?(): void;
  intercept(event: Event): Event | null;
  interceptAll(events: Event[]): Event[];
  close?(): void;
}

/** Gives an interceptor written per event its batch form. */
export abstract class EventInterceptor implements Interceptor {
  abstract intercept(event: Event): Event | null;

  interceptAll(events: Event[]): Event[] {
    const out: Event[] = [];
    for (const event of events) {
      const kept = this.intercept(event);
      if (kept !== null) out.push(kept);
    }
    return out;
  }
}

/**
 * Sets one header on every event, keeping one already set when preserveExisting (Flume's host,
 * static, timestamp and UUID interceptors): a subclass says what the value is.
 */
export abstract class HeaderInterceptor extends EventInterceptor {
  constructor(
    protected readonly header: string,
    protected readonly preserveExisting: boolean,
  ) {
    super();
  }

  /** The value for the next event. */
  protected abstract value(): string;

  intercept(event: Event): Event {
    if (this.preserveExisting && this.header in event.headers) return event;
    event.headers[this.header] = this.value();
    return event;
  }
}

/** Runs interceptors in their configured order (Flume's InterceptorChain). */
export class InterceptorChain implements Interceptor {
  constructor(readonly interceptors: Interceptor[] = []) {}

  initialize(): void {
    for (const i of this.interceptors) i.initialize?.();
  }

  intercept(event: Event): Event | null {
    let current: Event | null = event;
    for (const i of this.interceptors) {
      if (current === null) return null;
      current = i.intercept(current);
    }
    return current;
  }

  interceptAll(events: Event[]): Event[] {
    let current = events;
    for (const i of this.interceptors) {
      if (current.length === 0) break;
      current = i.interceptAll(current);
    }
    return current;
  }

  close(): void {
    for (const i of this.interceptors) i.close?.();
  }
}
