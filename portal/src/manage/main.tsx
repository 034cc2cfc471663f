// The management portal: agents (their properties, access tokens), the resources agents are built from,
// role assignments, app configuration, plugin packages, and analytics. Every form sends what the
// Management API takes and shows the API's own validation messages.
import { useEffect, useState } from 'preact/hooks';
import { type Context, mount } from '../shell';
import { Analytics } from './analytics';
import { Packages } from './packages';
import { Resources } from './resources';
import { type Section, TYPES } from './types';
const SECTIONS: [Section, string][] = [
  ...(Object.entries(TYPES) as [keyof typeof TYPES, { title: string }][]).map(
    ([k, v]) => [k, v.title] as [Section, string],
  ),
  ['packages', 'Plugin packages'],
  ['analytics', 'Analytics'],
];

/** The section the address names (#prompts), else agents. */
const sectionOf = (hash: string): Section => SECTIONS.find(([k]) => k === hash.slice(1))?.[0] ?? 'agents';

function Manage({ ctx }: { ctx: Context }) {
  const [section, setSection] = useState<Section>(sectionOf(location.hash));
  useEffect(() => {
    const onHash = () => setSection(sectionOf(location.hash));
    addEventListener('hashchange', onHash);
    return () => removeEventListener('hashchange', onHash);
  }, []);
  return (
    <div class="manage">
      <nav aria-label="Sections">
        <ul>
          {SECTIONS.map(([k, title]) => (
            <li key={k}>
              <a href={`#${k}`} aria-current={k === section ? 'page' : undefined}>
                {title}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <main>
        {section === 'packages' ? (
          <Packages ctx={ctx} />
        ) : section === 'analytics' ? (
          <Analytics ctx={ctx} />
        ) : (
          <Resources ctx={ctx} kind={section} />
        )}
      </main>
    </div>
  );
}

mount('Management', (ctx) => <Manage ctx={ctx} />);
