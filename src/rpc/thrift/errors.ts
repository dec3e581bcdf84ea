import { RpcProtocolError, RpcStatusError } from "../errors.ts";
import { appErrorName } from "./types.ts";

/** Bytes that are not a valid message of the protocol in use (truncated, bad type, bad size). */
export class ThriftProtocolError extends RpcProtocolError {}

/** The server answered with a TApplicationException instead of a Status. */
export class ThriftApplicationError extends RpcStatusError {
  constructor(
    readonly type: number,
    readonly detail: string,
    message: string,
  ) {
    super("EXCEPTION", message);
  }

  get typeName(): string {
    return appErrorName(this.type);
  }
}
