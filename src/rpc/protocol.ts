/**
 * Flume's AvroSourceProtocol, exactly as Apache Flume 1.11's Java side prints it. The text
 * matters byte for byte: its MD5 is the hash exchanged in the Avro IPC handshake, and a server
 * answering match=NONE sends this text back.
 */
export const PROTOCOL_TEXT =
  "{\"protocol\":\"AvroSourceProtocol\",\"namespace\":\"org.apache.flume.source.avro\",\"doc\":\"Licensed to the Apache Software Foundation (ASF) under one\\nor more contributor license agreements.  See the NOTICE file\\ndistributed with this work for additional information\\nregarding copyright ownership.  The ASF licenses this file\\nto you under the Apache License, Version 2.0 (the\\n\\\"License\\\"); you may not use this file except in compliance\\nwith the License.  You may obtain a copy of the License at\\n\\nhttp://www.apache.org/licenses/LICENSE-2.0\\n\\nUnless required by applicable law or agreed to in writing,\\nsoftware distributed under the License is distributed on an\\n\\\"AS IS\\\" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY\\nKIND, either express or implied.  See the License for the\\nspecific language governing permissions and limitations\\nunder the License.\",\"types\":[{\"type\":\"enum\",\"name\":\"Status\",\"symbols\":[\"OK\",\"FAILED\",\"UNKNOWN\"]},{\"type\":\"record\",\"name\":\"AvroFlumeEvent\",\"fields\":[{\"name\":\"headers\",\"type\":{\"type\":\"map\",\"values\":\"string\"}},{\"name\":\"body\",\"type\":\"bytes\"}]}],\"messages\":{\"append\":{\"request\":[{\"name\":\"event\",\"type\":\"AvroFlumeEvent\"}],\"response\":\"Status\"},\"appendBatch\":{\"request\":[{\"name\":\"events\",\"type\":{\"type\":\"array\",\"items\":\"AvroFlumeEvent\"}}],\"response\":\"Status\"}}}";

/** MD5 of PROTOCOL_TEXT (checked by test/rpc/protocol.test.ts). */
export const PROTOCOL_HASH_HEX = "8076c53714e01f6e2c1deb9544e7b1fe";

export const PROTOCOL_HASH: Buffer = Buffer.from(PROTOCOL_HASH_HEX, "hex");

/** The Status enum's symbols in their declared order; the wire carries the index. */
export const STATUS_SYMBOLS = ["OK", "FAILED", "UNKNOWN"] as const;
export type RpcStatus = (typeof STATUS_SYMBOLS)[number];

export const MESSAGE_APPEND = "append";
export const MESSAGE_APPEND_BATCH = "appendBatch";
