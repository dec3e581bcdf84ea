/**
 * Errors of the Apache Flume file channel reader and of `flume channel migrate`. Each names the
 * file (and offset) it is about and says what to do, so the CLI prints the message as it is.
 */
import { FlumeError } from "../../core/errors.ts";

/** Base of every error about reading a Flume channel or migrating it. */
export class FlumeMigrationError extends FlumeError {}

/** A record or event in a Flume data file that cannot be read as Flume wrote it. */
export class DamagedRecordError extends FlumeMigrationError {
  constructor(
    readonly file: string,
    readonly offset: number,
    readonly reason: string,
  ) {
    super(`damaged record in ${file} at offset ${offset}: ${reason}`);
  }
}

/** A Flume metadata file (`log-N.meta`, `checkpoint.meta`) that cannot be decoded. */
export class DamagedMetadataError extends FlumeMigrationError {
  constructor(
    readonly file: string,
    readonly reason: string,
  ) {
    super(`cannot read ${file}: ${reason}`);
  }
}

/** Something Flume 1.11 can write but this reader does not handle (encryption, format V2). */
export class UnsupportedFlumeFormatError extends FlumeMigrationError {}

/** The checkpoint or the log refers to a data file that is not in the given dataDirs. */
export class MissingLogFileError extends FlumeMigrationError {}

/** A Flume agent still holds the channel's `in_use.lock`. */
export class FlumeChannelInUseError extends FlumeMigrationError {
  constructor(
    readonly lockFile: string,
    readonly pid: number | null,
  ) {
    super(
      `${lockFile} is locked by ${pid === null ? "a running process" : `process ${pid}`}: an Apache Flume agent is still using this channel. ` +
        `Stop that agent first (its channel must not change while it is read), then run the command again`,
    );
  }
}

/** The target directories hold something a migration must not write into. */
export class MigrationTargetError extends FlumeMigrationError {}
