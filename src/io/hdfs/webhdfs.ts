/**
 * A WebHDFS client (Hadoop's REST API of the NameNode and DataNodes) over the runtime's fetch.
 * Not undici: the DataNode answers every CREATE and APPEND with an unasked-for "100 Continue",
 * which undici's HTTP/1.1 client rejects as a bad response; Bun's and Deno's fetch skip it.
 *
 * Durability: a CREATE answered 201 or an APPEND answered 200 means the DataNode's client wrote
 * the bytes through the whole pipeline and closed the file, so every replica acknowledged them:
 * at least what Flume's hflush gives. Cost: the NameNode answers CREATE and APPEND with a 307 to
 * a DataNode; this client remembers, per file, the DataNode it was sent to and sends the next
 * APPENDs of that file there directly (one HTTP exchange per batch), going back through the
 * NameNode when that DataNode fails.
 */
import { type DfsClient, type FileStatus, HdfsError } from "./file-system.ts";

export interface WebHdfsOptions {
  /** http://namenode:9870 */
  nameNode: URL;
  /** The user the NameNode sees (user.name, simple authentication). */
  user: string;
  /** Impersonate this user (doas); the NameNode must allow `user` to proxy. */
  proxyUser?: string;
  /** Bound on one HTTP exchange, in milliseconds (Flume's callTimeout). */
  timeoutMs: number;
}

interface RemoteException {
  RemoteException?: { exception?: string; javaClassName?: string; message?: string };
}

export class WebHdfsClient implements DfsClient {
  readonly label: string;
  /** Per file: the DataNode URL its last write went to (with namenoderpcaddress). */
  private readonly dataNodeOf = new Map<string, URL>();
  /** Aborted by abort(): fails every exchange under way and every later one. */
  private readonly aborted = new AbortController();

  constructor(private readonly o: WebHdfsOptions) {
    this.label = `webhdfs://${o.nameNode.host}`;
  }

  private url(path: string, op: string, params: Record<string, string> = {}): URL {
    const u = new URL(`/webhdfs/v1${encodePath(path)}`, this.o.nameNode);
    u.searchParams.set("op", op);
    u.searchParams.set("user.name", this.o.user);
    if (this.o.proxyUser) u.searchParams.set("doas", this.o.proxyUser);
    for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
    return u;
  }

  /** One exchange; the body read as text (small JSON answers). */
  private async call(op: string, path: string, method: string, url: URL, body?: Uint8Array): Promise<{ status: number; text: string; location: string | null }> {
    try {
      const res = await fetch(url, {
        method,
        body,
        redirect: "manual",
        headers: body ? { "content-type": "application/octet-stream" } : undefined,
        signal: AbortSignal.any([AbortSignal.timeout(this.o.timeoutMs), this.aborted.signal]),
      });
      const text = await res.text();
      return { status: res.status, text, location: res.headers.get("location") };
    } catch (err) {
      const e = err as Error & { code?: string };
      if (this.aborted.signal.aborted) throw new HdfsError(op, path, `${url.host}: ${String(this.aborted.signal.reason)}`, undefined, { cause: err });
      const why = e.name === "TimeoutError" ? `no answer within callTimeout (${this.o.timeoutMs} ms)` : `${e.code ?? e.name}: ${e.message}`;
      throw new HdfsError(op, path, `${url.host} unreachable: ${why}`, undefined, { cause: err });
    }
  }

  private fail(op: string, path: string, status: number, text: string): never {
    let remote: string | undefined;
    let message = text.slice(0, 500);
    try {
      const r = (JSON.parse(text) as RemoteException).RemoteException;
      if (r) {
        remote = r.exception;
        message = r.message ?? message;
      }
    } catch {
      // not JSON: keep the text
    }
    throw new HdfsError(op, path, `HTTP ${status}${remote ? ` ${remote}` : ""}: ${message.split("\n")[0]}`, remote);
  }

  /** NameNode first, then the DataNode it redirects to; the DataNode is remembered for the file. */
  private async twoStep(op: "CREATE" | "APPEND", path: string, method: "PUT" | "POST", params: Record<string, string>, bytes: Uint8Array): Promise<void> {
    const first = await this.call(op, path, method, this.url(path, op, { ...params, noredirect: "true" }));
    if (first.status !== 200 && first.status !== 307) this.fail(op, path, first.status, first.text);
    let location = first.location;
    if (first.status === 200) location = (JSON.parse(first.text) as { Location?: string }).Location ?? null;
    if (!location) throw new HdfsError(op, path, `the NameNode named no DataNode to write to (HTTP ${first.status})`);
    const dn = new URL(location);
    const res = await this.call(op, path, method, dn, bytes);
    if (res.status !== 200 && res.status !== 201) this.fail(op, path, res.status, res.text);
    this.remember(path, dn);
  }

  private remember(path: string, dn: URL): void {
    const base = new URL(dn.origin);
    const rpc = dn.searchParams.get("namenoderpcaddress");
    if (rpc) base.searchParams.set("namenoderpcaddress", rpc);
    this.dataNodeOf.set(path, base);
    // A sink writes few files at once; forget old ones.
    if (this.dataNodeOf.size > 10_000) this.dataNodeOf.delete(this.dataNodeOf.keys().next().value as string);
  }

  async create(path: string, bytes: Uint8Array): Promise<void> {
    await this.twoStep("CREATE", path, "PUT", { overwrite: "false", createparent: "true" }, bytes);
  }

  async append(path: string, bytes: Uint8Array): Promise<void> {
    const dn = this.dataNodeOf.get(path);
    if (dn) {
      const url = new URL(`/webhdfs/v1${encodePath(path)}`, dn.origin);
      url.searchParams.set("op", "APPEND");
      url.searchParams.set("user.name", this.o.user);
      if (this.o.proxyUser) url.searchParams.set("doas", this.o.proxyUser);
      url.searchParams.set("namenoderpcaddress", dn.searchParams.get("namenoderpcaddress") ?? "");
      try {
        const res = await this.call("APPEND", path, "POST", url, bytes);
        if (res.status === 200) return;
        this.fail("APPEND", path, res.status, res.text);
      } catch (err) {
        // The DataNode may be gone, or refuse for a reason the NameNode will name: ask it.
        this.dataNodeOf.delete(path);
        if (err instanceof HdfsError && err.remote && !/DataNode|IOException$/.test(err.remote)) throw err;
      }
    }
    await this.twoStep("APPEND", path, "POST", {}, bytes);
  }

  async rename(from: string, to: string): Promise<boolean> {
    const r = await this.call("RENAME", from, "PUT", this.url(from, "RENAME", { destination: to }));
    if (r.status !== 200) this.fail("RENAME", from, r.status, r.text);
    this.dataNodeOf.delete(from);
    return (JSON.parse(r.text) as { boolean: boolean }).boolean === true;
  }

  async delete(path: string): Promise<boolean> {
    const r = await this.call("DELETE", path, "DELETE", this.url(path, "DELETE", { recursive: "false" }));
    if (r.status !== 200) this.fail("DELETE", path, r.status, r.text);
    this.dataNodeOf.delete(path);
    return (JSON.parse(r.text) as { boolean: boolean }).boolean === true;
  }

  async list(dir: string): Promise<FileStatus[] | null> {
    const r = await this.call("LISTSTATUS", dir, "GET", this.url(dir, "LISTSTATUS"));
    if (r.status === 404) return null;
    if (r.status !== 200) this.fail("LISTSTATUS", dir, r.status, r.text);
    const statuses = (JSON.parse(r.text) as { FileStatuses: { FileStatus: { pathSuffix: string; type: string; length: number; modificationTime: number }[] } }).FileStatuses.FileStatus;
    return statuses.map((s) => ({ name: s.pathSuffix, type: s.type === "DIRECTORY" ? "DIRECTORY" : "FILE", length: s.length, modificationTime: s.modificationTime }));
  }

  async setMark(path: string, name: string, value: string): Promise<boolean> {
    const r = await this.call("SETXATTR", path, "PUT", this.url(path, "SETXATTR", { "xattr.name": `user.${name}`, "xattr.value": JSON.stringify(value), flag: "CREATE" }));
    return r.status === 200;
  }

  async getMark(path: string, name: string): Promise<string | null> {
    const r = await this.call("GETXATTRS", path, "GET", this.url(path, "GETXATTRS", { "xattr.name": `user.${name}`, encoding: "text" }));
    if (r.status !== 200) return null;
    const attrs = (JSON.parse(r.text) as { XAttrs?: { name: string; value: string | null }[] }).XAttrs ?? [];
    const v = attrs.find((a) => a.name === `user.${name}`)?.value;
    if (v == null) return null;
    try {
      return JSON.parse(v) as string;
    } catch {
      return v;
    }
  }

  async close(): Promise<void> {
    this.dataNodeOf.clear();
  }

  abort(why: string): void {
    this.aborted.abort(why);
  }
}

/** Each segment percent-encoded ('%' and '#' in a name must not end the path). */
export function encodePath(p: string): string {
  return p
    .split("/")
    .map((s) => encodeURIComponent(s))
    .join("/");
}
