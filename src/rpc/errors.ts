import { EventDeliveryException, FlumeError } from "../core/errors.ts";

/** Bytes from a peer that are not a valid Avro RPC frame or payload; the connection is closed. */
export class RpcProtocolError extends FlumeError {}

/** A frame or buffer larger than the configured bound; the connection is closed. */
export class RpcFrameTooLargeError extends RpcProtocolError {}

/** The server could not be reached, or the connection broke before an answer. */
export class RpcConnectionError extends EventDeliveryException {}

/** No answer within request-timeout (or no connection within connect-timeout). */
export class RpcTimeoutError extends EventDeliveryException {}

/** The Avro handshake (the first call on a connection) not answered within connect-timeout: the connection was never set up. */
export class RpcHandshakeTimeoutError extends RpcTimeoutError {}

/** The server answered, but not with OK (Status FAILED/UNKNOWN or an Avro error). */
export class RpcStatusError extends EventDeliveryException {
  constructor(
    readonly status: string,
    message: string,
  ) {
    super(message);
  }
}

