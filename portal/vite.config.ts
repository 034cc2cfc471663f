// The portals: three pages (chat, management, the API reference) built by Vite with Preact into dist/portal, which the Core API
// serves at /portal/ (functions/portal.ts). `npm run build` runs this after tsc.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));

export default defineConfig({
  root: here('.'),
  base: '/portal/',
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: here('../dist/portal'),
    emptyOutDir: true,
    // MSAL (about 280 KB) is a chunk of its own, loaded only where Entra ID sign-in is configured.
    // Swagger UI (about 1.8 MB) is loaded only by the API reference page.
    chunkSizeWarningLimit: 2000,
    rollupOptions: { input: { index: here('index.html'), manage: here('manage.html'), docs: here('docs.html') } },
  },
});
