/**
 * The Maven artifact sets of every JVM peer the tests and benchmarks start, in one place so
 * that `.ci/run` (through scripts/test-peers.ts) resolves them all before the suite.
 */
import type { MavenSet } from "./jvm.ts";

export const FLUME_VERSION = "1.11.0";
const LOG4J = "2.20.0";

/** Apache Flume 1.11.0's agent (org.apache.flume.node.Application) with log4j 2 as its slf4j binding. */
export const FLUME: MavenSet = {
  name: "flume",
  artifacts: [
    `org.apache.flume:flume-ng-node:${FLUME_VERSION}`,
    `org.apache.flume.flume-ng-sources:flume-taildir-source:${FLUME_VERSION}`,
    `org.apache.logging.log4j:log4j-slf4j-impl:${LOG4J}`,
    `org.apache.logging.log4j:log4j-core:${LOG4J}`,
    `org.apache.logging.log4j:log4j-api:${LOG4J}`,
  ],
};

export const HADOOP_VERSION = "3.3.6";

/**
 * Apache Hadoop's HDFS daemons (NameNode, DataNode) and client with FsShell, for test/support/hdfs.ts;
 * the same jars are the Hadoop client that Flume's HDFS sink needs beside FLUME.
 */
export const HADOOP: MavenSet = {
  name: "hadoop",
  artifacts: [
    `org.apache.hadoop:hadoop-common:${HADOOP_VERSION}`,
    `org.apache.hadoop:hadoop-hdfs:${HADOOP_VERSION}`,
    `org.apache.hadoop:hadoop-hdfs-client:${HADOOP_VERSION}`,
    // Hadoop's Lz4Codec runs on lz4-java, which hadoop-common declares "provided" (its distribution ships it).
    "org.lz4:lz4-java:1.7.1",
  ],
  // hadoop-hdfs brings a second, older slf4j binding besides hadoop-common's slf4j-reload4j.
  exclusions: ["org.slf4j:slf4j-log4j12"],
};

export const KAFKA_VERSION = "4.4.0";

/**
 * An Apache Kafka broker in KRaft mode (kafka.Kafka, kafka.tools.StorageTool) with Kafka's own
 * tools (console producer and consumer, ProducerPerformance, ConsumerPerformance), log4j 2 as
 * the slf4j binding.
 */
export const KAFKA: MavenSet = {
  name: "kafka",
  artifacts: [
    `org.apache.kafka:kafka_2.13:${KAFKA_VERSION}`,
    `org.apache.kafka:kafka-tools:${KAFKA_VERSION}`,
    `org.apache.logging.log4j:log4j-slf4j-impl:2.24.3`,
    `org.apache.logging.log4j:log4j-core:2.24.3`,
  ],
};

/** Apache Flume 1.11.0's Kafka sink, source and channel, to put beside FLUME on a classpath. */
export const FLUME_KAFKA: MavenSet = {
  name: "flume-kafka",
  artifacts: [
    `org.apache.flume.flume-ng-sinks:flume-ng-kafka-sink:${FLUME_VERSION}`,
    `org.apache.flume.flume-ng-sources:flume-kafka-source:${FLUME_VERSION}`,
    `org.apache.flume.flume-ng-channels:flume-kafka-channel:${FLUME_VERSION}`,
  ],
  // FLUME brings the agent and its logging binding.
  exclusions: ["org.slf4j:slf4j-log4j12", "log4j:log4j", "org.apache.logging.log4j:log4j-slf4j-impl"],
};

/** Every set, for scripts/test-peers.ts. */
export const JVM_SETS: MavenSet[] = [FLUME, HADOOP, KAFKA, FLUME_KAFKA];
