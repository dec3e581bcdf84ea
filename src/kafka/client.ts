/**
 * The Kafka client (@platformatic/kafka), loaded on first use: a configuration without a Kafka
 * component never loads it (its protocol tables cost ~60 MB of RSS under Bun). Only the types
 * are imported statically.
 */
import { useHardwareCrc32c } from "../io/crc32c.ts";

export type KafkaModule = typeof import("@platformatic/kafka");

let loading: Promise<KafkaModule> | null = null;

/** The client; record batches are checksummed with the CPU's CRC32C instruction from then on where it has one. */
export function loadKafka(): Promise<KafkaModule> {
  loading ??= Promise.all([import("@platformatic/kafka"), useHardwareCrc32c()]).then(([kafka]) => kafka);
  return loading;
}
