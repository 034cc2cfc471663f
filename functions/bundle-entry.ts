// Entry of the deployed Functions app (dist/azure/index.js): the app itself is one CommonJS bundle beside it
// (app.cjs), loaded with the code cache the build saved (app.cjs.cache). `saveCodeCache` is for that build.
import { loadWithCodeCache } from './code-cache.js';

const app = loadWithCodeCache<typeof import('./bundled-app.js')>(new URL('./app.cjs', import.meta.url));
await app.exports.startApp();

export const saveCodeCache = (): void => app.saveCache();
/** Whether this start had the build's code cache: 'taken', or 'rejected' under another V8 (or 'none'). */
export const codeCache = app.cache;
