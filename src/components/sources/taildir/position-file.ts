import { renameSync } from "node:fs";
import { readFile } from "node:fs/promises";

/** One entry of Flume's TAILDIR position file. */
export interface PositionEntry {
  inode: number;
  pos: number;
  file: string;
}

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

/**
 * Flume's format, byte for byte what Gson writes: no spaces, keys inode, pos, file. Flume's
 * reader stops at a key it does not know, so nothing else may go in this file.
 */
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

/**
 * Renames a damaged position or state file to `<file>.corrupt-<UTC time>` so that the next
 * write does not overwrite it; returns the new name.
 */
export function setAside(file: string, now: number): string {
  const stamp = new Date(now).toISOString().replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z");
  const aside = `${file}.corrupt-${stamp}`;
  renameSync(file, aside);
  return aside;
}
