import { readdir, stat } from "node:fs/promises";
import path from "node:path";
import { type PositionalReader, ReadOnlyFile } from "../../../io/read-only-file.ts";
import { type Fingerprint, HEAD_BYTES, TAIL_BYTES, hashBytes, holdsFingerprint, readRange } from "./fingerprint.ts";
import type { MatchedFile } from "./matcher.ts";
import type { PositionKeeper } from "./positions.ts";
import type { TaildirScope } from "./scope.ts";
import type { TailFile } from "./tail-file.ts";

/** Parts of a supposed copy compared with its original, besides head and tail. */
const COPY_SAMPLES = 4;

/** Where a file seen for the first time starts, and whether it waits as a tracked file's copy. */
export interface TakeUp {
  pos: number;
  shadowOf: number | null;
  verified: number;
  /** The tracked file this one is a copy of, found truncated since the copy (handled once this one is tracked). */
  truncatedOriginal?: TailFile;
}

/**
 * Rotation by copytruncate and truncation: a new file that is a copy of a tracked one waits as
 * its shadow until the original is truncated or gone, then continues where the original was;
 * a tracked file that shrank (or was rewritten) is read again from its start, its lost lines
 * taken from a copy when one is found.
 */
export class Rotation {
  constructor(
    private readonly scope: TaildirScope,
    private readonly positions: PositionKeeper,
  ) {}

  /** A tracked file's size now: growth, a truncation, or a shadow that grew (still a copy?). */
  async updateTracked(tf: TailFile, size: number, now: number): Promise<void> {
    if (tf.shadowOf !== null) {
      const original = this.scope.files.get(tf.shadowOf);
      tf.grew(size, now);
      if (original && size > (this.scope.verifiedCopy.get(tf.inode) ?? 0)) await this.recheckShadow(tf, original);
      return;
    }
    if (size < tf.pos) await this.handleShrink(tf, size);
    else if (size !== tf.size && tf.pos > 0 && !(await tf.tailStillMatches())) await this.handleShrink(tf, size);
    else tf.grew(size, now);
  }

  /**
   * How to take up a file seen for the first time: from 0, unless it is a copy (copytruncate)
   * of a tracked file: then it waits as that file's shadow until the original is truncated or
   * gone, and continues where the original was. A copy of a file known only from before a
   * restart (its record) continues at the recorded position.
   */
  async takeUpNewFile(file: MatchedFile): Promise<TakeUp> {
    const { files, missing, logger, name } = this.scope;
    const fresh = { pos: 0, shadowOf: null, verified: 0 };
    if (file.size === 0) return fresh;
    try {
      return await withHandle(file.path, async (h) => {
        const head = await readRange(h, 0, HEAD_BYTES);
        for (const tf of files.values()) {
          if (tf.inode === file.inode || tf.shadowOf !== null || tf.pos === 0) continue;
          const fp = tf.fingerprint();
          if (!fp || !headMatches(head, fp)) continue;
          // Still its old content (not truncated yet): compare what the copy holds so far.
          if ((await tf.currentSize()) >= file.size && (await this.samePrefix(h, tf, file.size))) {
            logger.info(`${name}: ${file.path} is a copy of ${tf.path} (copytruncate?); it is read from where the original is once the original is truncated or gone`);
            return { pos: 0, shadowOf: tf.inode, verified: file.size };
          }
          // The copy holds the original's bytes up to its position and the original does not any
          // more: truncated (and written again) right after the copy, before a look saw it.
          if (file.size >= fp.tailEnd && (await holdsFingerprint(h, fp)) && !(await tf.holds(fp))) {
            logger.info(`${name}: ${file.path} is a copy of ${tf.path}, which was truncated since (copytruncate); continuing the copy at pos ${tf.pos}`);
            return { pos: Math.min(tf.pos, file.size), shadowOf: null, verified: 0, truncatedOriginal: tf };
          }
        }
        for (const [inode, r] of missing) {
          const fp = r.fp;
          if (!fp || file.size < fp.tailEnd || !headMatches(head, fp) || !(await holdsFingerprint(h, fp))) continue;
          missing.delete(inode);
          logger.info(`${name}: ${file.path} is a copy of ${r.file}, read up to pos ${r.pos} before; continuing it there`);
          return { pos: Math.min(r.pos, file.size), shadowOf: null, verified: 0 };
        }
        return fresh;
      });
    } catch {
      return fresh;
    }
  }

  /** True when the open file's first `length` bytes look like the tracked file's (head, tail and samples between). */
  private async samePrefix(copy: PositionalReader, original: TailFile, length: number): Promise<boolean> {
    const offsets: number[] = [Math.max(0, length - TAIL_BYTES)];
    for (let i = 1; i <= COPY_SAMPLES; i++) offsets.push(Math.floor((length * i) / (COPY_SAMPLES + 1)));
    for (const at of offsets) {
      const n = Math.min(TAIL_BYTES, length - at);
      if (n <= 0) continue;
      const [a, b] = await Promise.all([readRange(copy, at, n), original.readAt(at, n)]);
      if (a.length !== n || b.length !== n || hashBytes(a) !== hashBytes(b)) return false;
    }
    return true;
  }

  /** A shadow grew: it must still equal its original's bytes, else it is a file of its own. */
  private async recheckShadow(tf: TailFile, original: TailFile): Promise<void> {
    const verified = this.scope.verifiedCopy.get(tf.inode) ?? 0;
    if (tf.size <= verified) return;
    let same = false;
    try {
      same = (await original.currentSize()) >= tf.size && (await withHandle(tf.path, (h) => this.samePrefix(h, original, tf.size)));
    } catch {
      same = false;
    }
    if (same) {
      this.scope.verifiedCopy.set(tf.inode, tf.size);
      this.positions.recordChange(tf);
      return;
    }
    // The original lost its bytes, not the copy: truncated before a look saw it; the copy continues there.
    const fp = original.fingerprint();
    if (fp && !(await original.holds(fp)) && tf.size >= fp.tailEnd && (await tf.holds(fp))) {
      await this.handleShrink(original, await original.currentSize());
      return;
    }
    this.scope.logger.info(`${this.scope.name}: ${tf.path} is no copy of ${original.path} after all; reading it from pos 0`);
    this.unshadow(tf, 0);
  }

  private unshadow(tf: TailFile, pos: number): void {
    tf.shadowOf = null;
    this.scope.verifiedCopy.delete(tf.inode);
    tf.rewindTo(pos);
    this.positions.recordChange(tf);
  }

  /**
   * Starts a shadow: its original lost its content (truncated) or is gone. With the original's
   * fingerprint at its position present in the copy, the copy continues at that position;
   * otherwise after the bytes known to be the original's.
   */
  releaseShadow(tf: TailFile, originalPos: number, fp: Fingerprint | null, why: string): void {
    const verified = this.scope.verifiedCopy.get(tf.inode) ?? 0;
    const at = Math.min(originalPos, Math.max(verified, fp && tf.size >= fp.tailEnd ? originalPos : 0), tf.size);
    this.scope.logger.info(`${this.scope.name}: continuing ${tf.path}, the copy of a file that ${why}, at pos ${at}`);
    this.unshadow(tf, at);
  }

  /** Starts the shadows of `original` (it was truncated or let go); true when it had any. */
  async releaseShadows(original: TailFile, pos: number, fp: Fingerprint | null, why: string): Promise<boolean> {
    let any = false;
    for (const tf of [...this.scope.files.values()]) {
      if (tf.shadowOf !== original.inode) continue;
      // The fingerprint at the original's position, when the copy is long enough to hold it.
      const full = fp !== null && tf.size >= fp.tailEnd && (await tf.holds(fp));
      this.releaseShadow(tf, pos, full ? fp : null, why);
      any = true;
    }
    return any;
  }

  /**
   * A tracked file got smaller than its committed position, or its content before the
   * position changed: truncated (copytruncate, or by hand). The lines after the position may
   * survive in a copy in the same directory: its shadow, or a file found by fingerprint,
   * continues there. Then the truncated file is read from its start.
   */
  async handleShrink(tf: TailFile, size: number): Promise<void> {
    const { files, matchers, logger, name } = this.scope;
    const fp = tf.fingerprint();
    const oldPos = tf.pos;
    if (await this.releaseShadows(tf, oldPos, fp, "was truncated")) {
      logger.info(`${name}: ${tf.path} was truncated after being copied; reading it again from pos 0`);
    } else if (fp) {
      const copy = await this.findCopy(path.dirname(tf.path), tf.inode, fp, oldPos);
      if (copy) {
        const existing = files.get(copy.inode);
        if (existing) {
          if (existing.pos < oldPos) {
            existing.rewindTo(oldPos);
            existing.size = copy.size;
            this.positions.recordChange(existing);
          }
        } else {
          const ctf = this.scope.openFile(copy.path, copy.inode, tf.group, oldPos);
          ctf.size = copy.size;
          ctf.matched = matchers.some((m) => m.directory === path.dirname(copy.path) && m.matchesName(path.basename(copy.path)));
          ctf.adoptFingerprint(fp);
          files.set(copy.inode, ctf);
          this.positions.recordChange(ctf);
        }
        logger.info(`${name}: ${tf.path} was truncated after being copied to ${copy.path}; continuing the copy at pos ${oldPos}`);
      } else {
        logger.warn(`${name}: Pos ${oldPos} is larger than file size ${size}! Restarting from pos 0, file: ${tf.path}, inode: ${tf.inode} (no copy of its content found; lines after pos ${oldPos} were lost by the truncation)`);
      }
    } else {
      logger.info(`Pos ${oldPos} is larger than file size! Restarting from pos 0, file: ${tf.path}, inode: ${tf.inode}`);
    }
    tf.rewindTo(0);
    tf.size = size;
    this.positions.recordChange(tf);
  }

  private async findCopy(dir: string, exclude: number, fp: Fingerprint, minSize: number): Promise<{ path: string; inode: number; size: number } | null> {
    const positionFile = this.scope.options.positionFile;
    let names: string[];
    try {
      names = await readdir(dir);
    } catch {
      return null;
    }
    for (const n of names) {
      const p = path.join(dir, n);
      if (p === positionFile || p.startsWith(`${positionFile}.`)) continue;
      try {
        const s = await stat(p);
        if (!s.isFile() || s.ino === exclude || s.size < minSize) continue;
        // A tracked copy already read from there on is found too: nothing to change, nothing lost.
        if (await withHandle(p, (h) => holdsFingerprint(h, fp))) return { path: p, inode: s.ino, size: s.size };
      } catch {
        // Gone since the listing.
      }
    }
    return null;
  }
}

function headMatches(head: Uint8Array, fp: Fingerprint): boolean {
  return head.length >= fp.headLen && hashBytes(head, 0, fp.headLen) === fp.head;
}

async function withHandle<T>(file: string, use: (h: ReadOnlyFile) => Promise<T>): Promise<T> {
  const h = await ReadOnlyFile.open(file);
  try {
    return await use(h);
  } finally {
    await h.close().catch(() => {});
  }
}
