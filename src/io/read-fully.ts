import { readSync } from "node:fs";

/**
 * Reads file bytes [position, position + want) into buf[0, want), looping over short reads;
 * returns how many it got (fewer only at the end of the file).
 */
export function readFullySync(fd: number, buf: Buffer, want: number, position: number): number {
  let got = 0;
  while (got < want) {
    const n = readSync(fd, buf, got, want - got, position + got);
    if (n <= 0) break;
    got += n;
  }
  return got;
}
