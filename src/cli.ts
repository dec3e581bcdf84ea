#!/usr/bin/env bun
import { runMain } from "citty";
import { printUsage } from "./cli/command.ts";
import { main } from "./cli/main.ts";

runMain(main, { showUsage: printUsage });
