/**
 * Thrift's wire constants as Flume 1.11 (libthrift 0.14) uses them, and the names of Flume's
 * ThriftSourceProtocol service (flume-ng-sdk/src/main/thrift/flume.thrift).
 */

/** Field and element types, numbered as TBinaryProtocol writes them (TCompactProtocol maps them). */
export const TType = {
  STOP: 0,
  VOID: 1,
  BOOL: 2,
  BYTE: 3,
  DOUBLE: 4,
  I16: 6,
  I32: 8,
  I64: 10,
  STRING: 11,
  STRUCT: 12,
  MAP: 13,
  SET: 14,
  LIST: 15,
  UUID: 16,
} as const;

export const MessageType = {
  CALL: 1,
  REPLY: 2,
  EXCEPTION: 3,
  ONEWAY: 4,
} as const;

/** TApplicationException.type values (the ones this code sends or explains). */
export const AppErrorType = {
  UNKNOWN: 0,
  UNKNOWN_METHOD: 1,
  INVALID_MESSAGE_TYPE: 2,
  WRONG_METHOD_NAME: 3,
  BAD_SEQUENCE_ID: 4,
  MISSING_RESULT: 5,
  INTERNAL_ERROR: 6,
  PROTOCOL_ERROR: 7,
} as const;

const APP_ERROR_NAMES = ["UNKNOWN", "UNKNOWN_METHOD", "INVALID_MESSAGE_TYPE", "WRONG_METHOD_NAME", "BAD_SEQUENCE_ID", "MISSING_RESULT", "INTERNAL_ERROR", "PROTOCOL_ERROR"];

export function appErrorName(type: number): string {
  return APP_ERROR_NAMES[type] ?? `type ${type}`;
}

/** Flume's Status enum, by wire value. Flume's source only ever answers OK or FAILED. */
export const STATUS_VALUES = ["OK", "FAILED", "ERROR", "UNKNOWN"] as const;
export type ThriftStatus = (typeof STATUS_VALUES)[number];

/** Status as sent on the wire. */
export function statusValue(status: ThriftStatus): number {
  return STATUS_VALUES.indexOf(status);
}

/** A wire value as a Status name; values Flume does not define are shown as numbers. */
export function statusName(value: number): string {
  return STATUS_VALUES[value] ?? `undefined Status ${value}`;
}

export const METHOD_APPEND = "append";
export const METHOD_APPEND_BATCH = "appendBatch";

/** The two protocols Flume's thrift source and sink accept (TJSONProtocol is not one of them). */
export type ThriftProtocolName = "binary" | "compact";

/**
 * libthrift 0.14's TConfiguration.DEFAULT_MAX_FRAME_SIZE: Flume's TFastFramedTransport refuses
 * larger frames and closes the connection.
 */
export const DEFAULT_MAX_FRAME_SIZE = 16_384_000;

/** libthrift's DEFAULT_RECURSION_DEPTH: how deep skipped unknown structs and containers may nest. */
export const MAX_NESTING = 64;
