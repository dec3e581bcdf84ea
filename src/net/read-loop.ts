/**
 * The read loop of a source's connection (netcat and syslogtcp; avro and thrift through
 * request-loop.ts): reads queue while a batch waits for the channel, and the connection is paused
 * meanwhile, so a slow channel slows the sender instead of filling memory. A subclass says what a
 * batch of reads becomes.
 */
import { type ConnectionHandler, type TcpConnection, WRITE_HIGH_WATER } from "./tcp-server.ts";

export abstract class PausingReadLoop implements ConnectionHandler {
  private queue: Uint8Array[] | null = null;
  private busy = false;
  /** The peer half-closed: finish() runs once what it sent is consumed. */
  private ended = false;
  /** Reading was paused for a busy run. */
  private paused = false;
  /**
   * true: reading pauses as each run starts (a batch of reads waits for the channel). false:
   * only when a read arrives while a run is busy, which spares a pause and a resume per request
   * to a client that waits for each answer before it sends more.
   */
  protected readonly pauseEachRun: boolean = true;

  constructor(protected readonly conn: TcpConnection) {}

  /** Each run of the loop, as it starts (for a source that waits for them on stop). */
  protected started(_run: Promise<void>): void {}

  /** Reading is over for this connection (the source stops, or the client was refused): reads are dropped, the connection stays paused. */
  protected get halted(): boolean {
    return false;
  }

  /** Every read queued so far, in order; the arrays are the loop's to keep or release. */
  protected abstract consume(reads: Uint8Array[]): Promise<void>;

  /** The peer half-closed and everything it sent was consumed. */
  protected abstract finish(): Promise<void>;

  /** consume() or finish() threw: the connection is destroyed after this. */
  protected abstract failed(err: unknown): void;

  /** Stops reading from the peer while a run is busy (a subclass with a stage before the loop, as an inflater, pauses it too). */
  protected pauseReading(): void {
    this.conn.pause();
  }

  protected resumeReading(): void {
    this.conn.resume();
  }

  data(chunk: Uint8Array): void {
    if (this.halted) return;
    (this.queue ??= []).push(chunk);
    if (!this.busy) this.start();
    else if (this.readAheadFull()) this.pauseUntilIdle();
  }

  /** A read arrived while a run is busy: whether reading pauses now (by default at once; a subclass may read ahead). */
  protected readAheadFull(): boolean {
    return true;
  }

  end(): void {
    this.ended = true;
    if (!this.busy) this.start();
  }

  /** Pauses reading until the current run is over. */
  protected pauseUntilIdle(): void {
    if (this.paused) return;
    this.paused = true;
    this.pauseReading();
  }

  private start(): void {
    this.started(this.run());
  }

  private async run(): Promise<void> {
    const conn = this.conn;
    this.busy = true;
    if (this.pauseEachRun) this.pauseUntilIdle();
    try {
      const queue = this.queue;
      while (queue !== null && queue.length > 0 && !this.halted) {
        await this.consume(queue.splice(0));
        // A client that does not read its answers must not make us buffer them without bound.
        if (conn.pendingBytes > WRITE_HIGH_WATER) await conn.drained();
      }
      if (this.ended) {
        this.ended = false;
        await this.finish();
      }
    } catch (err) {
      this.failed(err);
      conn.destroy();
    } finally {
      this.busy = false;
      if (this.paused && !conn.closed && !this.halted) {
        this.paused = false;
        this.resumeReading();
      }
    }
  }
}
