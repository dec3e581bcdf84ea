/**
 * The local file system for file:// paths of the hdfs sink: every write is fsync'd before it
 * resolves (as durable as a local disk makes it), renames never replace (link, then unlink).
 */
import { link, mkdir, open, readdir, stat, unlink } from "node:fs/promises";
import path from "node:path";
import { type DfsClient, type FileStatus, HdfsError } from "./file-system.ts";

export class LocalClient implements DfsClient {
  readonly label = "file://";

  private async write(op: string, file: string, flags: string, bytes: Uint8Array): Promise<void> {
    try {
      if (flags === "wx") await mkdir(path.dirname(file), { recursive: true });
      const fh = await open(file, flags);
      try {
        let off = 0;
        while (off < bytes.length) off += (await fh.write(bytes, off, bytes.length - off)).bytesWritten;
        await fh.datasync();
      } finally {
        await fh.close();
      }
    } catch (err) {
      throw new HdfsError(op, file, (err as Error).message, (err as NodeJS.ErrnoException).code, { cause: err });
    }
  }

  create(file: string, bytes: Uint8Array): Promise<void> {
    return this.write("create", file, "wx", bytes);
  }

  append(file: string, bytes: Uint8Array): Promise<void> {
    return this.write("append", file, "a", bytes);
  }

  async rename(from: string, to: string): Promise<boolean> {
    try {
      await link(from, to);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "EEXIST" || code === "ENOENT") return false;
      throw new HdfsError("rename", from, (err as Error).message, code, { cause: err });
    }
    await unlink(from);
    return true;
  }

  async delete(file: string): Promise<boolean> {
    try {
      await unlink(file);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return false;
      throw new HdfsError("delete", file, (err as Error).message, (err as NodeJS.ErrnoException).code, { cause: err });
    }
  }

  async list(dir: string): Promise<FileStatus[] | null> {
    let names: string[];
    try {
      names = await readdir(dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw new HdfsError("list", dir, (err as Error).message, (err as NodeJS.ErrnoException).code, { cause: err });
    }
    const out: FileStatus[] = [];
    for (const name of names) {
      const s = await stat(path.join(dir, name)).catch(() => null);
      if (s) out.push({ name, type: s.isDirectory() ? "DIRECTORY" : "FILE", length: s.size, modificationTime: s.mtimeMs });
    }
    return out;
  }

  async setMark(): Promise<boolean> {
    return false;
  }

  async getMark(): Promise<string | null> {
    return null;
  }

  async close(): Promise<void> {}

  /** Local writes do not wait on a peer: nothing to give up. */
  abort(): void {}
}
