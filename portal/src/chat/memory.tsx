// The user's memory: read, export, import and clear it.
import { useEffect, useState } from 'preact/hooks';
import { answer, download } from '../api';
import { type Context, ErrorText, FilePicker, saveAs } from '../shell';
export function Memory({ ctx }: { ctx: Context }) {
  const [content, setContent] = useState<string>();
  const [error, setError] = useState<unknown>();
  const read = () =>
    answer(ctx.api.core.GET('/memory', { params: { query: { scope: 'user' } } })).then(
      (m) => setContent(m.content_markdown),
      setError,
    );
  useEffect(() => void read(), []);
  const exportIt = async () => {
    const exported = ctx.api.core.GET('/memory/export', { params: { query: { scope: 'user' } }, parseAs: 'blob' });
    saveAs(await download(exported), 'memory.md');
  };
  const importIt = async (file: File) => {
    const content_markdown = await file.text();
    await ctx.api.core.POST('/memory/import', { body: { scope: 'user', content_markdown, mode: 'append' } });
    await read();
  };
  const clear = async () => {
    if (!confirm('Clear everything the agents remember about you? This cannot be undone.')) return;
    await ctx.api.core.POST('/memory/clear', { body: { scope: 'user', confirm: true } });
    await read();
  };
  return (
    <section class="memory" aria-label="Your memory">
      <h2>What the agents remember about you</h2>
      <ErrorText error={error} />
      <pre class="memory-body">{content || 'Nothing yet.'}</pre>
      <div class="row">
        <button onClick={() => void exportIt().catch(setError)}>Export</button>
        <FilePicker
          id="memory-import"
          label="Import…"
          accept=".md,text/markdown,text/plain"
          onFile={(file) => void importIt(file).catch(setError)}
        />
        <button class="danger" onClick={() => void clear().catch(setError)}>
          Clear…
        </button>
      </div>
    </section>
  );
}
