/**
 * Kafka's own murmur2 test vectors (UtilsTest.testMurmur2: Utils.murmur2 as a signed 32-bit int)
 * and the partition of 6 the Java producer's DefaultPartitioner (Flume 1.11's Kafka 2.7.2
 * client) gives each key: Utils.toPositive(murmur2(key)) % 6, toPositive being `n & 0x7fffffff`.
 */
export const JAVA_KEYS: readonly (readonly [key: string, murmur2: number, partitionOf6: number])[] = [
  ["21", -973932308, 0],
  ["foobar", -790332482, 0],
  ["a-little-bit-long-string", -985981536, 2],
  ["a-little-bit-longer-string", -1486304829, 5],
  ["lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971, 5],
  ["abc", 479470107, 3],
];
