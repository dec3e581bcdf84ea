/**
 * Runs `fn` over `items` a slice at a time, the calls within a slice concurrently, and returns
 * the results in the order of `items`. File-system calls awaited one by one each pay a round
 * trip through the I/O thread pool and a turn of the event loop: stat'ing 4,000 files took
 * 130-190 ms of CPU one by one and 18-21 ms at once. Slices bound what is in flight.
 */
export async function mapInSlices<T, R>(items: readonly T[], size: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let at = 0; at < items.length; at += size) out.push(...(await Promise.all(items.slice(at, at + size).map(fn))));
  return out;
}

/** Stats in flight at once for a look at a directory's files. */
export const STAT_SLICE = 128;
