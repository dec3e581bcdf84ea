import { readFile } from "node:fs/promises";
import { writeFileAtomic } from "../../../io/atomic-write.ts";

/** One entry of Flume's TAILDIR position file. */
export interface PositionEntry {
  inode: number;
  pos: number;
  file: string;
}

/**
 * Bytes that identify a file's content: its first bytes, and the bytes just before the
 * committed position. They let the source recognise a copy made by copytruncate.
 */
export interface Fingerprint {
  head: string; // base64 of up to HEAD_BYTES from offset 0
  tail: string; // base64 of up to TAIL_BYTES ending at tailEnd
  tailEnd: number;
}

export const HEAD_BYTES = 64;
export const TAIL_BYTES = 64;

/**
 * Parses Flume's position file: `[{"inode":1,"pos":2,"file":"/a"}, ...]`. Throws with the
 * reason when the content is not that shape.
 */
export function parsePositions(text: string): PositionEntry[] {
  if (text.trim() === "") return [];
  const data: unknown = JSON.parse(text);
  if (!Array.isArray(data)) throw new Error("expected a JSON array of {inode, pos, file}");
  const out: PositionEntry[] = [];
  for (const item of data) {
    const o = item as Record<string, unknown>;
    if (typeof o !== "object" || o === null || typeof o.inode !== "number" || typeof o.pos !== "number" || typeof o.file !== "string") {
      throw new Error(`Detected missing value in position file. entry: ${JSON.stringify(item)}`);
    }
    out.push({ inode: o.inode, pos: o.pos, file: o.file });
  }
  return out;
}

/** Flume's format, byte for byte what Gson writes: no spaces, keys inode, pos, file. */
export function formatPositions(entries: readonly PositionEntry[]): string {
  return JSON.stringify(entries.map((e) => ({ inode: e.inode, pos: e.pos, file: e.file })));
}

/** Reads the position file; a missing file is no positions. */
export async function readPositionFile(file: string): Promise<PositionEntry[]> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw err;
  }
  return parsePositions(text);
}

/** The side file next to the position file that keeps fingerprints (Flume's format has no room). */
export function fingerprintFileOf(positionFile: string): string {
  return `${positionFile}.fingerprints`;
}

export async function readFingerprints(file: string): Promise<Map<number, Fingerprint>> {
  const out = new Map<number, Fingerprint>();
  try {
    const data = JSON.parse(await readFile(file, "utf8")) as Record<string, Fingerprint>;
    for (const [k, v] of Object.entries(data)) {
      if (v && typeof v.head === "string" && typeof v.tail === "string" && typeof v.tailEnd === "number") out.set(Number(k), v);
    }
  } catch {
    // Fingerprints only improve copytruncate detection; without them we read from the start.
  }
  return out;
}

/**
 * Replaces a file atomically and durably (write a temporary file, flush it, rename over,
 * flush the directory): a crash or power loss leaves either the old or the new content, never
 * a torn or empty file. `syncDir` false leaves the directory flush to a following write in the
 * same directory (one fsync for the position and fingerprint files).
 */
export function writeAtomically(file: string, content: string, syncDir = true): Promise<void> {
  return writeFileAtomic(file, content, { syncDirectory: syncDir });
}
