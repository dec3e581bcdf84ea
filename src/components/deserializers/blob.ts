import { defineComponent } from "../component.ts";
import { builtIn } from "../registry.ts";
import { BlobDeserializer, type DeserializerFactory } from "../sources/spooldir/deserializers.ts";

export const definition = defineComponent({
  ...builtIn.blobDeserializer,
  doc: "The whole file as one event (in pieces of at most maxBlobLength bytes).",
  props: { maxBlobLength: { type: "int", default: 100000000, min: 1, doc: "Largest event in bytes; larger files become several events" } },
  create: (config): DeserializerFactory => ({
    open: (f) =>
      new BlobDeserializer(f.handle, f.pos, f.size, config.maxBlobLength, () => f.warn(`File length exceeds maxBlobLength (${config.maxBlobLength}), splitting BLOB event of ${f.path}`)),
  }),
});
