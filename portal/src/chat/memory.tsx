// The user's memory: read, export, import and clear it.
import { useEffect, useState } from 'preact/hooks';
import { type Context, ErrorText, FilePicker, saveAs } from '../shell';
export function Memory({ ctx }: { ctx: Context }) {
  const [content, setContent] = useState<string>();
  const [error, setError] = useState<unknown>();
  const read = () => ctx.api.json<{ content_markdown: string }>('core', '/memory?scope=user').then((m) => setContent(m.content_markdown), setError);
  useEffect(() => void read(), []);
  const exportIt = async () => {
    await saveAs(await ctx.api.call('core', '/memory/export?scope=user'), 'memory.md');
  };
  const importIt = async (file: File) => {
    await ctx.api.call('core', '/memory/import', { method: 'POST', json: { scope: 'user', content_markdown: await file.text(), mode: 'append' } });
    await read();
  };
  const clear = async () => {
    if (!confirm('Clear everything the agents remember about you? This cannot be undone.')) return;
    await ctx.api.call('core', '/memory/clear', { method: 'POST', json: { scope: 'user', confirm: true } });
    await read();
  };
  return (
    <section class="memory" aria-label="Your memory">
      <h2>What the agents remember about you</h2>
      <ErrorText error={error} />
      <pre class="memory-body">{content || 'Nothing yet.'}</pre>
      <div class="row">
        <button onClick={() => void exportIt().catch(setError)}>Export</button>
        <FilePicker id="memory-import" label="Import…" accept=".md,text/markdown,text/plain" onFile={(file) => void importIt(file).catch(setError)} />
        <button class="danger" onClick={() => void clear().catch(setError)}>
          Clear…
        </button>
      </div>
    </section>
  );
}
