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
 * static, timestamp and UUID interceptors, which differ only in the value).
 */
export class HeaderInterceptor extends EventInterceptor {
  constructor(
    private readonly header: string,
    private readonly preserveExisting: boolean,
    /** The value for the next event. */
    private readonly value: () => string,
    /** One value for a whole batch (the batch's events arrived together): the timestamp reads its clock once. */
    private readonly onePerBatch = false,
  ) {
    super();
  }

  intercept(event: Event): Event {
    if (this.preserveExisting && this.header in event.headers) return event;
    event.headers[this.header] = this.value();
    return event;
  }

  override interceptAll(events: Event[]): Event[] {
    if (!this.onePerBatch) return super.interceptAll(events);
    const value = this.value();
    for (const e of events) if (!(this.preserveExisting && this.header in e.headers)) e.headers[this.header] = value;
    return events;
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
