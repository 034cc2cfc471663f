// Azure Functions entry point of tsc's per-file build. The deployed bundle starts the same app from
// functions/bundle-entry.ts instead.
import { startApp } from './app.js';

await startApp();
