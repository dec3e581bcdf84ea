/**
 * The Kafka client (@platformatic/kafka), loaded on first use: a configuration without a Kafka
 * component never loads it (its protocol tables cost ~60 MB of RSS under Bun). Only the types
 * are imported statically.
 */
export type KafkaModule = typeof import("@platformatic/kafka");

let loading: Promise<KafkaModule> | null = null;

export function loadKafka(): Promise<KafkaModule> {
  loading ??= import("@platformatic/kafka");
  return loading;
}
