import { openFormat, findCodec, type FileType } from "./src/components/sinks/hdfs/formats.ts";
import { definition as text } from "./src/components/serializers/text.ts";
import { createEvent } from "./src/core/event.ts";
import { context } from "./test/support/components.ts";
const events = Array.from({ length: 1000 }, (_, i) => createEvent(`${String(i).padStart(8, "0")} ${"lorem ipsum dolor sit amet ".repeat(3)} ${Math.random()}`.slice(0, 100), {}));
const ser = text.create(text.parse({}).options, context("s"));
for (const codec of ["gzip", "default", "bzip2", "snappy", "lz4"]) {
  const c = findCodec(codec)!;
  for (const fileType of ["SequenceFile", "CompressedStream"] as FileType[]) {
    const f = await openFormat({ fileType, codec: c, compressionType: "BLOCK", writeFormat: "Writable", serializer: ser as any, now: () => 0 });
    for (let i = 0; i < 5; i++) f.batch(events, 0, 1000);
    const t = performance.now(); let bytes = 0;
    for (let i = 0; i < 20; i++) bytes += f.batch(events, 0, 1000).length;
    const ms = (performance.now() - t) / 20;
    console.log(codec.padEnd(8), fileType.padEnd(17), ms.toFixed(2), "ms/batch of 1000x100B", (100_000 / ms / 1000).toFixed(0), "MB/s", "ratio", (bytes / 20 / 100000).toFixed(2));
  }
}
