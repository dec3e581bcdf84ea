/**
 * A small seeded PRNG (sfc32 seeded through splitmix32), so a simulation with the same seed
 * makes the same choices on every machine. Math.random is never used for decisions.
 */
export type Random = () => number;

function splitmix32(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
}

/** A generator of floats in [0, 1) determined by seed and stream (independent streams per use). */
export function seededRandom(seed: number, stream = 0): Random {
  const mix = splitmix32((seed ^ Math.imul(stream + 1, 0x27d4eb2f)) >>> 0);
  let a = mix();
  let b = mix();
  let c = mix();
  let d = mix();
  const next = (): number => {
    const t = (((a + b) >>> 0) + d) >>> 0;
    d = (d + 1) >>> 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) >>> 0;
    c = ((c << 21) | (c >>> 11)) >>> 0;
    c = (c + t) >>> 0;
    return t / 4294967296;
  };
  for (let i = 0; i < 12; i++) next();
  return next;
}

/** A seed given as text: a number is used as is, other text is hashed (FNV-1a). */
export function parseSeed(text: string): number {
  if (/^\d+$/.test(text)) return Number(BigInt(text) % 4294967296n);
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}
