/**
 * One file open for writing over Hadoop's native protocols: created on the NameNode, written
 * block by block through DataNode pipelines, kept open across batches (each `write` is
 * hflushed before it resolves), closed by ending its last block and completing the file.
 */
import { RemoteError } from "./ipc.ts";
import type { NameNode } from "./namenode.ts";
import { BlockPipeline, PipelineError, type PipelineOptions } from "./pipeline.ts";
import type { ExtendedBlock } from "./proto.ts";

/** Pipeline setups tried per block (Hadoop's dfs.client.block.write.retries is 3). */
const SETUP_ATTEMPTS = 3;

export interface StreamOptions extends PipelineOptions {
  blockSize: number;
}

export class HdfsOutputStream {
  private pipeline: BlockPipeline | null = null;
  /** The last block, whole, once its pipeline ended. */
  private previous: ExtendedBlock | undefined;
  private broken: Error | null = null;
  /** DataNodes that failed a pipeline setup of this file, not asked for again. */
  private readonly excluded = new Map<string, Uint8Array>();

  constructor(
    private readonly nn: NameNode,
    readonly path: string,
    readonly fileId: bigint,
    private readonly o: StreamOptions,
  ) {}

  /** Writes `bytes` and hflushes them: resolves when every DataNode acknowledged them. */
  async write(bytes: Uint8Array): Promise<void> {
    if (this.broken) throw this.broken;
    try {
      let pos = 0;
      while (pos < bytes.length) {
        const p = this.pipeline ?? (await this.nextBlock());
        const n = Math.min(this.o.blockSize - p.bytes, bytes.length - pos);
        p.write(bytes.subarray(pos, pos + n));
        pos += n;
        if (p.bytes >= this.o.blockSize) await this.endBlock(p);
      }
      await this.pipeline?.flush();
    } catch (err) {
      this.abort(err as Error);
      throw err;
    }
  }

  /**
   * A new block and its pipeline. A DataNode that fails the setup is excluded and the block asked
   * for again (the NameNode may not know yet that a DataNode is gone), as Hadoop's client does.
   */
  private async nextBlock(): Promise<BlockPipeline> {
    for (let attempt = 1; ; attempt++) {
      const lb = await this.addBlock();
      try {
        this.pipeline = await BlockPipeline.open(lb, this.o);
        return this.pipeline;
      } catch (err) {
        // Give the block back so the file does not keep an empty block nobody writes.
        await this.nn.abandonBlock(this.path, this.o.clientName, lb.block, this.fileId).catch(() => undefined);
        const bad = err instanceof PipelineError ? err.bad : undefined;
        if (!bad || attempt >= SETUP_ATTEMPTS) throw err;
        this.excluded.set(`${bad.ipAddr}:${bad.xferPort}`, bad.raw);
      }
    }
  }

  /**
   * addBlock, asked again while the NameNode answers NotReplicatedYetException: it refuses a new
   * block until the DataNodes reported the previous one, which a busy DataNode does late. Hadoop's
   * client waits the same way (dfs.client.block.write.locateFollowingBlock.retries); here the
   * wait is bounded by the call timeout.
   */
  private async addBlock() {
    const deadline = Date.now() + this.o.timeoutMs;
    for (let delay = 50; ; delay = Math.min(delay * 2, 400)) {
      try {
        return await this.nn.addBlock(this.path, this.o.clientName, this.previous, this.fileId, [...this.excluded.values()]);
      } catch (err) {
        if (!(err instanceof RemoteError && err.shortName === "NotReplicatedYetException") || Date.now() + delay > deadline) throw err;
        await new Promise((r) => setTimeout(r, delay));
      }
    }
  }

  private async endBlock(p: BlockPipeline): Promise<void> {
    await p.end();
    this.previous = { ...p.block.block, numBytes: BigInt(p.bytes) };
    this.pipeline = null;
  }

  /**
   * Ends the last block and completes the file; retried while the NameNode waits for the
   * DataNodes to report the finalized replicas (complete answers false meanwhile).
   */
  async close(): Promise<void> {
    if (this.broken) throw this.broken;
    try {
      if (this.pipeline) await this.endBlock(this.pipeline);
      const deadline = Date.now() + this.o.timeoutMs;
      for (let delay = 10; ; delay = Math.min(delay * 2, 400)) {
        if (await this.nn.complete(this.path, this.o.clientName, this.previous, this.fileId)) return;
        if (Date.now() > deadline) throw new Error(`the NameNode did not complete the file within ${this.o.timeoutMs} ms (too few replicas of its last block reported)`);
        await new Promise((r) => setTimeout(r, delay));
      }
    } catch (err) {
      this.abort(err as Error);
      throw err;
    }
  }

  /** Drops the pipeline; the file stays open until its lease is recovered. */
  abort(why: Error = new Error("aborted")): void {
    this.broken ??= why;
    this.pipeline?.abort();
    this.pipeline = null;
  }
}
