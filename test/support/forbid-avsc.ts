// Preloaded by the CLI test: fails the process if anything loads avsc, which would slow down
// `flume validate` (avsc must be imported lazily, only where Avro is actually used).
import { plugin } from "bun";

plugin({
  name: "forbid-avsc",
  setup(build) {
    build.onLoad({ filter: /node_modules[\\/]avsc[\\/]/ }, (args) => {
      throw new Error(`avsc was loaded (${args.path}) on a path that must not need it`);
    });
  },
});
