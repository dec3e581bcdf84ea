/**
 * Kafka's murmur2 (the Java client's Utils.murmur2: MurmurHash2, seed 0x9747b28c, read as a
 * signed 32-bit int) and the partition the Java producer gives a keyed record. Written here
 * because the client's murmur2 runs on BigInts (about 0.9 µs a key, more than the sink spends
 * on the rest of an event); this one stays in 32-bit integer arithmetic and allocates nothing.
 */
const SEED = 0x9747b28c;
const M = 0x5bd1e995;

export function murmur2(data: Uint8Array): number {
  const length = data.length;
  let h = (SEED ^ length) | 0;
  const whole = length & ~3;
  for (let i = 0; i < whole; i += 4) {
    let k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24);
    k = Math.imul(k, M);
    k ^= k >>> 24;
    k = Math.imul(k, M);
    h = Math.imul(h, M) ^ k;
  }
  const tail = length & 3;
  if (tail > 0) {
    if (tail === 3) h ^= data[whole + 2] << 16;
    if (tail >= 2) h ^= data[whole + 1] << 8;
    h ^= data[whole];
    h = Math.imul(h, M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h | 0;
}

/** The Java producer's partition of a keyed record before the modulo: Utils.toPositive(murmur2(key)), toPositive being `& 0x7fffffff`. */
export function javaKeyHash(key: Uint8Array): number {
  return murmur2(key) & 0x7fffffff;
}
