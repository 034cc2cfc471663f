// The chat portal: the agents the user may use, their sessions, a conversation with streamed answers
// (citations, token counts, ratings, file upload and the welcome message as the agent's flags say), and the
// user's memory.
import { useEffect, useState } from 'preact/hooks';
import { answer } from '../api';
import type { AgentItem, Session } from '../schemas';
import { type Context, ErrorText, mount } from '../shell';
import { agentView, type AgentView } from './agent-view';
import { Conversation } from './conversation';
import { Memory } from './memory';
import { Sessions } from './sessions';
function Chat({ ctx }: { ctx: Context }) {
  const [agents, setAgents] = useState<AgentItem[]>();
  const [agent, setAgent] = useState<string>();
  const [view, setView] = useState<AgentView>();
  const [session, setSession] = useState<Session>();
  const [tab, setTab] = useState<'chat' | 'memory'>('chat');
  const [error, setError] = useState<unknown>();
  useEffect(() => {
    answer(ctx.api.core.GET('/completions/agents')).then((list) => {
      setAgents(list);
      setAgent(list[0]?.resource.name);
    }, setError);
  }, []);
  useEffect(() => {
    if (agent) agentView(ctx, agent).then(setView, setError);
  }, [agent]);
  if (error) return <ErrorText error={error} />;
  if (!agents) return <p aria-busy="true">Loading…</p>;
  if (agents.length === 0) return <p>No agent is available to you yet: ask an administrator for access.</p>;
  return (
    <div class="chat">
      <aside>
        <label for="agent">Agent</label>
        <select id="agent" value={agent} onChange={(e) => setAgent(e.currentTarget.value)}>
          {agents.map((a) => (
            <option key={a.resource.name} value={a.resource.name}>
              {a.resource.display_name || a.resource.name}
            </option>
          ))}
        </select>
        <div class="tabs" role="tablist">
          <button role="tab" aria-selected={tab === 'chat'} onClick={() => setTab('chat')}>
            Chats
          </button>
          <button role="tab" aria-selected={tab === 'memory'} onClick={() => setTab('memory')}>
            Memory
          </button>
        </div>
        <Sessions ctx={ctx} current={session} onSelect={(s) => (setSession(s), setTab('chat'))} />
      </aside>
      <main>
        {tab === 'memory' ? (
          <Memory ctx={ctx} />
        ) : agent && view ? (
          <Conversation
            ctx={ctx}
            agent={agent}
            agentLabel={agents.find((a) => a.resource.name === agent)?.resource.display_name || agent}
            view={view}
            session={session}
            onSession={setSession}
          />
        ) : (
          <p aria-busy="true">Loading…</p>
        )}
      </main>
    </div>
  );
}

mount('Chat', (ctx) => <Chat ctx={ctx} />);
