// Preloaded by the Kafka config tests: fails the process if anything loads the Kafka client
// package, which `flume validate`, `describe` and `simulate` must never need (it is imported lazily).
import { plugin } from "bun";

plugin({
  name: "forbid-kafka",
  setup(build) {
    build.onLoad({ filter: /node_modules[\\/]@platformatic[\\/]/ }, (args) => {
      throw new Error(`the Kafka client was loaded (${args.path}) on a path that must not need it`);
    });
  },
});
