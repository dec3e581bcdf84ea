/**
 * A bzip2 compressor (the .bz2 stream format that Hadoop's BZip2Codec, bzip2(1) and libbz2 read).
 * No npm library compresses bzip2 under Bun, Deno and `bun build --compile` with a licence we can
 * ship (the pure JS ones are GPL or decoders only), so it is written here, small and plain:
 * run-length step, Burrows-Wheeler transform by prefix doubling, move-to-front with RUNA/RUNB
 * zero runs, and one Huffman table per block (written twice: the format needs at least two).
 * It trades some ratio for simplicity; the output is a standard stream.
 */

/** Bytes of run-length output a block may hold at level 9 (libbz2's nblockMAX). */
const BLOCK_MAX = 100_000 * 9 - 19;
/** The longest Huffman code we write (libbz2's encoder limit; decoders accept 20). */
const MAX_CODE_LEN = 17;
/** Symbols coded with one table selector. */
const GROUP_SIZE = 50;

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i << 24;
    for (let k = 0; k < 8; k++) c = c & 0x80000000 ? (c << 1) ^ 0x04c11db7 : c << 1;
    t[i] = c >>> 0;
  }
  return t;
})();

/** Writes bits most significant first. */
class BitWriter {
  private buf = new Uint8Array(1 << 16);
  private len = 0;
  private acc = 0;
  private nacc = 0;

  bits(n: number, v: number): void {
    // n <= 24 so acc (< 8 bits pending + n) stays within 32 bits.
    this.acc = (this.acc << n) | (v & ((1 << n) - 1));
    this.nacc += n;
    while (this.nacc >= 8) {
      this.nacc -= 8;
      this.byte((this.acc >>> this.nacc) & 0xff);
    }
    this.acc &= (1 << this.nacc) - 1;
  }

  private byte(b: number): void {
    if (this.len === this.buf.length) {
      const next = new Uint8Array(this.buf.length * 2);
      next.set(this.buf);
      this.buf = next;
    }
    this.buf[this.len++] = b;
  }

  u32(v: number): void {
    this.bits(16, v >>> 16);
    this.bits(16, v & 0xffff);
  }

  finish(): Uint8Array {
    if (this.nacc > 0) this.bits(8 - this.nacc, 0);
    return this.buf.slice(0, this.len);
  }
}

/** One bzip2 stream ("BZh9", blocks, end-of-stream mark and combined CRC) holding `data`. */
export function bzip2Compress(data: Uint8Array): Uint8Array {
  const w = new BitWriter();
  w.bits(24, 0x425a68); // "BZh"
  w.bits(8, 0x39); // '9': 900 kB blocks
  // Run-length output grows at most 5/4 (a run of 4 becomes 5 bytes).
  const rle = new Uint8Array(Math.min(BLOCK_MAX, Math.ceil(data.length * 1.25) + 5));
  let combined = 0;
  let i = 0;
  while (i < data.length) {
    // Step 1: runs of 4 to 255 equal bytes become 4 bytes and a count.
    let n = 0;
    let crc = 0xffffffff;
    const start = i;
    while (i < data.length && n <= rle.length - 5) {
      const b = data[i];
      let run = 1;
      while (run < 255 && i + run < data.length && data[i + run] === b) run++;
      if (run >= 4) {
        rle[n] = rle[n + 1] = rle[n + 2] = rle[n + 3] = b;
        rle[n + 4] = run - 4;
        n += 5;
      } else {
        for (let k = 0; k < run; k++) rle[n++] = b;
      }
      i += run;
    }
    for (let k = start; k < i; k++) crc = (crc << 8) ^ CRC_TABLE[((crc >>> 24) ^ data[k]) & 0xff];
    crc = ~crc >>> 0;
    combined = (((combined << 1) | (combined >>> 31)) ^ crc) >>> 0;
    writeBlock(w, rle.subarray(0, n), crc);
  }
  w.bits(24, 0x177245);
  w.bits(24, 0x385090);
  w.u32(combined);
  return w.finish();
}

/** The Burrows-Wheeler transform of the cyclic string s: the last column and the row of s itself. */
function bwt(s: Uint8Array): { last: Uint8Array; origPtr: number } {
  const n = s.length;
  const sa = new Int32Array(n);
  let cls = new Int32Array(n);
  let next = new Int32Array(n);
  const shifted = new Int32Array(n);
  let cnt = new Int32Array(Math.max(256, n));
  for (let i = 0; i < n; i++) cnt[s[i]]++;
  for (let b = 1; b < 256; b++) cnt[b] += cnt[b - 1];
  for (let i = n - 1; i >= 0; i--) sa[--cnt[s[i]]] = i;
  let classes = 1;
  cls[sa[0]] = 0;
  for (let i = 1; i < n; i++) {
    if (s[sa[i]] !== s[sa[i - 1]]) classes++;
    cls[sa[i]] = classes - 1;
  }
  // Prefix doubling: sort by (class of the first k, class of the next k), by counting.
  for (let k = 1; k < n && classes < n; k <<= 1) {
    for (let i = 0; i < n; i++) {
      const p = sa[i] - k;
      shifted[i] = p < 0 ? p + n : p;
    }
    cnt = cnt.length >= classes ? cnt.fill(0, 0, classes) : new Int32Array(classes);
    for (let i = 0; i < n; i++) cnt[cls[shifted[i]]]++;
    for (let c = 1; c < classes; c++) cnt[c] += cnt[c - 1];
    for (let i = n - 1; i >= 0; i--) sa[--cnt[cls[shifted[i]]]] = shifted[i];
    classes = 1;
    next[sa[0]] = 0;
    for (let i = 1; i < n; i++) {
      const a = sa[i];
      const b = sa[i - 1];
      const a2 = a + k >= n ? a + k - n : a + k;
      const b2 = b + k >= n ? b + k - n : b + k;
      if (cls[a] !== cls[b] || cls[a2] !== cls[b2]) classes++;
      next[a] = classes - 1;
    }
    [cls, next] = [next, cls];
  }
  const last = new Uint8Array(n);
  let origPtr = 0;
  for (let i = 0; i < n; i++) {
    const p = sa[i];
    if (p === 0) origPtr = i;
    last[i] = s[p === 0 ? n - 1 : p - 1];
  }
  return { last, origPtr };
}

/** Huffman code lengths for freq (zero counted as one, as libbz2 does), none longer than MAX_CODE_LEN. */
function codeLengths(freq: readonly number[]): Uint8Array {
  const size = freq.length;
  let weights = freq.map((f) => Math.max(1, f));
  const leaves = Array.from({ length: size }, (_, k) => k);
  for (;;) {
    // Two queues: the leaves sorted once, then the merged nodes, made in increasing weight.
    const weight = [...weights];
    leaves.sort((x, y) => weight[x] - weight[y]);
    const parent = new Int32Array(2 * size).fill(-1);
    const merged: number[] = [];
    let li = 0;
    let mi = 0;
    const smallest = () => (mi >= merged.length || (li < size && weight[leaves[li]] <= weight[merged[mi]]) ? leaves[li++] : merged[mi++]);
    for (let made = 0; made < size - 1; made++) {
      const a = smallest();
      const b = smallest();
      const node = weight.length;
      weight.push(weight[a] + weight[b]);
      parent[a] = node;
      parent[b] = node;
      merged.push(node);
    }
    // Depths, from the root (the last node) down: a parent is always made after its children.
    const depth = new Int32Array(weight.length);
    for (let k = weight.length - 2; k >= 0; k--) depth[k] = depth[parent[k]] + 1;
    const lens = new Uint8Array(size);
    let max = 0;
    for (let k = 0; k < size; k++) {
      lens[k] = depth[k];
      if (depth[k] > max) max = depth[k];
    }
    if (max <= MAX_CODE_LEN) return lens;
    weights = weights.map((x) => 1 + (x >> 1));
  }
}

function writeBlock(w: BitWriter, block: Uint8Array, crc: number): void {
  const { last, origPtr } = bwt(block);
  // The bytes used, renumbered 0..nInUse-1.
  const inUse = new Uint8Array(256);
  for (let k = 0; k < last.length; k++) inUse[last[k]] = 1;
  const seq = new Uint8Array(256);
  let nInUse = 0;
  for (let b = 0; b < 256; b++) if (inUse[b]) seq[b] = nInUse++;
  const eob = nInUse + 1;
  const alphaSize = nInUse + 2;

  // Move-to-front; runs of zeros as RUNA (0) / RUNB (1) digits.
  const mtf = new Uint16Array(last.length + 1);
  let nMtf = 0;
  const order = Uint8Array.from({ length: nInUse }, (_, k) => k);
  const freq = new Array<number>(alphaSize).fill(0);
  let zeros = 0;
  const flushZeros = () => {
    let z = zeros - 1;
    for (;;) {
      const sym = z & 1;
      mtf[nMtf++] = sym;
      freq[sym]++;
      if (z < 2) break;
      z = (z - 2) >> 1;
    }
    zeros = 0;
  };
  for (let k = 0; k < last.length; k++) {
    const v = seq[last[k]];
    if (order[0] === v) {
      zeros++;
      continue;
    }
    if (zeros > 0) flushZeros();
    let j = 1;
    let prev = order[0];
    order[0] = v;
    while (order[j] !== v) {
      const t = order[j];
      order[j] = prev;
      prev = t;
      j++;
    }
    order[j] = prev;
    mtf[nMtf++] = j + 1;
    freq[j + 1]++;
  }
  if (zeros > 0) flushZeros();
  mtf[nMtf++] = eob;
  freq[eob]++;

  const { tables, selectors } = chooseTables(mtf.subarray(0, nMtf), freq);
  const codes = tables.map(canonicalCodes);

  w.bits(24, 0x314159);
  w.bits(24, 0x265359);
  w.u32(crc);
  w.bits(1, 0); // not randomised
  w.bits(24, origPtr);
  let used16 = 0;
  for (let g = 0; g < 16; g++) for (let b = 0; b < 16; b++) if (inUse[g * 16 + b]) used16 |= 0x8000 >> g;
  w.bits(16, used16);
  for (let g = 0; g < 16; g++) {
    if (!(used16 & (0x8000 >> g))) continue;
    let bits = 0;
    for (let b = 0; b < 16; b++) if (inUse[g * 16 + b]) bits |= 0x8000 >> b;
    w.bits(16, bits);
  }
  const nSelectors = selectors.length;
  w.bits(3, tables.length);
  w.bits(15, nSelectors);
  // Selectors, move-to-front coded, each index in unary.
  const recent = Array.from({ length: tables.length }, (_, t) => t);
  for (const sel of selectors) {
    const j = recent.indexOf(sel);
    recent.splice(j, 1);
    recent.unshift(sel);
    for (let k = 0; k < j; k++) w.bits(1, 1);
    w.bits(1, 0);
  }
  for (const lens of tables) {
    let cur = lens[0];
    w.bits(5, cur);
    for (let sym = 0; sym < alphaSize; sym++) {
      while (cur < lens[sym]) {
        w.bits(2, 2);
        cur++;
      }
      while (cur > lens[sym]) {
        w.bits(2, 3);
        cur--;
      }
      w.bits(1, 0);
    }
  }
  for (let k = 0; k < nMtf; k++) {
    const t = selectors[(k / GROUP_SIZE) | 0];
    const sym = mtf[k];
    w.bits(tables[t][sym], codes[t][sym]);
  }
}

/** Codes by length, then symbol order (how decoders assign them). */
function canonicalCodes(lens: Uint8Array): Int32Array {
  const codes = new Int32Array(lens.length);
  let code = 0;
  for (let len = 1; len <= MAX_CODE_LEN; len++) {
    for (let sym = 0; sym < lens.length; sym++) if (lens[sym] === len) codes[sym] = code++;
    code <<= 1;
  }
  return codes;
}

/**
 * libbz2's way to several tables: start from tables that each favour a slice of the symbols,
 * then a few rounds of giving each group of 50 symbols its cheapest table and rebuilding every
 * table from the symbols it was given.
 */
function chooseTables(mtf: Uint16Array, freq: readonly number[]): { tables: Uint8Array[]; selectors: Uint8Array } {
  const alphaSize = freq.length;
  const n = mtf.length;
  const nGroups = n < 200 ? 2 : n < 600 ? 3 : n < 1200 ? 4 : n < 2400 ? 5 : 6;
  let tables: Uint8Array[] = [];
  let remaining = n;
  let gs = 0;
  for (let part = nGroups; part > 0; part--) {
    const target = remaining / part;
    let ge = gs - 1;
    let sum = 0;
    while (sum < target && ge < alphaSize - 1) sum += freq[++ge];
    if (ge > gs && part !== nGroups && part !== 1 && (nGroups - part) % 2 === 1) sum -= freq[ge--];
    tables.unshift(Uint8Array.from({ length: alphaSize }, (_, v) => (v >= gs && v <= ge ? 0 : 15)));
    gs = ge + 1;
    remaining -= sum;
  }
  const nSelectors = Math.ceil(n / GROUP_SIZE);
  const selectors = new Uint8Array(nSelectors);
  for (let round = 0; round < 4; round++) {
    const counts = tables.map(() => new Array<number>(alphaSize).fill(0));
    for (let g = 0; g < nSelectors; g++) {
      const from = g * GROUP_SIZE;
      const to = Math.min(from + GROUP_SIZE, n);
      let best = 0;
      let bestCost = Infinity;
      for (let t = 0; t < tables.length; t++) {
        let cost = 0;
        for (let k = from; k < to; k++) cost += tables[t][mtf[k]];
        if (cost < bestCost) {
          bestCost = cost;
          best = t;
        }
      }
      selectors[g] = best;
      for (let k = from; k < to; k++) counts[best][mtf[k]]++;
    }
    tables = counts.map(codeLengths);
  }
  return { tables, selectors };
}
