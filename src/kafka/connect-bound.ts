/**
 * A connect to Kafka (a producer's first metadata, a consumer's join) raced against a time bound
 * and against abort(). The client's retries nest (metadata over listApis: 16 requests of
 * request.timeout.ms each with the default retries), so a broker that accepts connections and
 * never answers, or a peer that is no Kafka broker, would hold a start for minutes, and an
 * agent stopping would wait for it. The loser of the race is left to the caller, which closes
 * its client (that fails what the client still has under way).
 */
import { KafkaConnectAbortedError } from "./errors.ts";

/** Why a component's connect was aborted: its start under way when the agent (or a reload) stopped it. */
export const STOPPED_STARTING = "stopped while it started, before the brokers answered";

export class ConnectBound {
  private abortCurrent: ((err: Error) => void) | null = null;
  /** Why abort() was called while no connect was under way: the next one fails at once (a start that connects twice, aborted between them). */
  private abortedWhy: string | null = null;

  /** `work`, or the error of `timedOut()` once `ms` passed, or KafkaConnectAbortedError once abort() was called. */
  async run<T>(work: () => Promise<T>, ms: number, timedOut: () => Error): Promise<T> {
    const why = this.abortedWhy;
    this.abortedWhy = null;
    if (why !== null) throw new KafkaConnectAbortedError(why);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const bound = new Promise<never>((_, reject) => {
      this.abortCurrent = reject;
      timer = setTimeout(() => reject(timedOut()), ms);
    });
    const working = work();
    // The race's loser fails later (its client closed): not an unhandled rejection.
    working.catch(() => {});
    try {
      return await Promise.race([working, bound]);
    } finally {
      clearTimeout(timer);
      this.abortCurrent = null;
    }
  }

  /** Fails the connect under way at once, or else the next one. */
  abort(why: string): void {
    if (this.abortCurrent) this.abortCurrent(new KafkaConnectAbortedError(why));
    else this.abortedWhy = why;
  }

  /** The client closes: fails the connect under way, if any (a reconnect in the background), and forgets an earlier abort, so that it may connect again later. */
  cancel(why: string): void {
    this.abortCurrent?.(new KafkaConnectAbortedError(why));
    this.abortedWhy = null;
  }
}
