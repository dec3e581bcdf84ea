/**
 * The libc memory calls the agent makes through bun:ffi, bound once for every user (the memory
 * release's madvise, crc32c-sse42.ts's executable page): each dlopen of bun:ffi compiles its
 * own call stubs. Bun on Linux with glibc only; null elsewhere (Node, Deno, musl).
 */
export type BunFfi = typeof import("bun:ffi");
type Pointer = import("bun:ffi").Pointer;

export interface Libc {
  readonly ffi: BunFfi;
  madvise(address: number, length: number, advice: number): number;
  mmap(address: null, length: number, prot: number, flags: number, fd: number, offset: number): Pointer | null;
  mprotect(address: Pointer, length: number, prot: number): number;
}

let libc: Promise<Libc | null> | undefined;

export function loadLibc(): Promise<Libc | null> {
  libc ??= bind();
  return libc;
}

async function bind(): Promise<Libc | null> {
  if (process.platform !== "linux" || typeof Bun === "undefined") return null;
  try {
    const ffi = await import("bun:ffi");
    const { FFIType: T } = ffi;
    const { symbols } = ffi.dlopen("libc.so.6", {
      madvise: { args: [T.u64, T.u64, T.i32], returns: T.i32 },
      mmap: { args: [T.ptr, T.u64, T.i32, T.i32, T.i32, T.i64], returns: T.ptr },
      mprotect: { args: [T.ptr, T.u64, T.i32], returns: T.i32 },
    });
    return {
      ffi,
      madvise: (address, length, advice) => symbols.madvise(address, length, advice) as number,
      mmap: (address, length, prot, flags, fd, offset) => symbols.mmap(address, length, prot, flags, fd, offset) as Pointer | null,
      mprotect: (address, length, prot) => symbols.mprotect(address, length, prot) as number,
    };
  } catch {
    // musl or no FFI.
    return null;
  }
}
