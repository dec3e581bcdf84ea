/**
 * One file open for writing over Hadoop's native protocols: created on the NameNode, written
 * block by block through DataNode pipelines, kept open across batches (each `write` is
 * hflushed before it resolves), closed by ending its last block and completing the file.
 */
import type { NameNode } from "./namenode.ts";
import { BlockPipeline, type PipelineOptions } from "./pipeline.ts";
import type { ExtendedBlock } from "./proto.ts";

export interface StreamOptions extends PipelineOptions {
  blockSize: number;
}

export class HdfsOutputStream {
  private pipeline: BlockPipeline | null = null;
  /** The last block, whole, once its pipeline ended. */
  private previous: ExtendedBlock | undefined;
  private broken: Error | null = null;

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

  private async nextBlock(): Promise<BlockPipeline> {
    const lb = await this.nn.addBlock(this.path, this.o.clientName, this.previous, this.fileId);
    try {
      this.pipeline = await BlockPipeline.open(lb, this.o);
    } catch (err) {
      // Give the block back so the file does not keep an empty block nobody writes.
      await this.nn.abandonBlock(this.path, this.o.clientName, lb.block, this.fileId).catch(() => undefined);
      throw err;
    }
    return this.pipeline;
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
