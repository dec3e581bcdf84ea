import { expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { definition } from "../../../../src/components/channels/file/index.ts";
import { lookupComponent } from "../../../../src/components/registry.ts";
import { runCli } from "../../../support/helpers.ts";
import { tempDirsAfterEach } from "../../../support/file-channel.ts";

const temp = tempDirsAfterEach("flume-fc-def-");

test("type file and Flume's class name resolve to the file channel, with Flume's defaults", () => {
  expect(lookupComponent("channel", "file")).toBe(definition);
  expect(lookupComponent("channel", "org.apache.flume.channel.file.FileChannel")).toBe(definition);
  const defaults = Object.fromEntries(definition.schema.props.map((p) => [p.key, p.default]));
  expect(defaults).toMatchObject({
    capacity: 1000000,
    transactionCapacity: 10000,
    checkpointInterval: 30000,
    maxFileSize: 2146435071,
    minimumRequiredSpace: 524288000,
    "keep-alive": 3,
    useDualCheckpoints: false,
    checkpointOnClose: true,
    fsyncPerTransaction: true,
    fsyncInterval: 5,
    inlineWriteLimit: 2,
  });
  expect(String(defaults.checkpointDir)).toEndWith(path.join(".flume", "file-channel", "checkpoint"));
  expect(String(defaults.dataDirs)).toEndWith(path.join(".flume", "file-channel", "data"));
});

test("flume validate reports the file channel's cross-property problems by key", () => {
  const dir = temp();
  const conf = path.join(dir, "a.conf");
  writeFileSync(
    conf,
    [
      "a1.sources = r1",
      "a1.channels = c1",
      "a1.sinks = k1",
      "a1.sources.r1.type = seq",
      "a1.sources.r1.channels = c1",
      "a1.sinks.k1.type = null",
      "a1.sinks.k1.channel = c1",
      "a1.channels.c1.type = file",
      "a1.channels.c1.capacity = 100",
      "a1.channels.c1.transactionCapacity = 1000",
      "a1.channels.c1.useDualCheckpoints = true",
      "a1.channels.c1.encryption.activeKey = key-0",
      `a1.channels.c1.checkpointDir = ${path.join(dir, "cp")}`,
      `a1.channels.c1.dataDirs = ${path.join(dir, "d1")}, ${path.join(dir, "d2")}`,
      "",
    ].join("\n"),
  );
  const r = runCli(["validate", conf]);
  expect(r.code).toBe(1);
  const out = r.stdout + r.stderr;
  expect(out).toMatch(/channel c1: transactionCapacity: .*capacity/);
  expect(out).toContain("backupCheckpointDir");
  expect(out).toContain("encryption is not supported");
});
