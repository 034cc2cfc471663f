// An answer rendered as Markdown (CommonMark, with code blocks) by micromark: raw HTML in the answer is
// shown as text, never run, and link and image addresses other than http(s), mailto and relative ones are
// dropped. Links open in a new tab without giving it this page (noopener, noreferrer).
import { micromark } from 'micromark';
import { useEffect, useMemo, useRef } from 'preact/hooks';

export function Markdown({ text }: { text: string }) {
  const html = useMemo(() => micromark(text), [text]);
  const root = useRef<HTMLDivElement>(null);
  useEffect(() => {
    for (const a of root.current?.querySelectorAll('a') ?? []) {
      a.target = '_blank';
      a.rel = 'noopener noreferrer';
    }
  }, [html]);
  return <div ref={root} class="text markdown" dangerouslySetInnerHTML={{ __html: html }} />;
}
