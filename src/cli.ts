#!/usr/bin/env bun
import { runMain } from "citty";
import { main } from "./cli/main.ts";

runMain(main);
