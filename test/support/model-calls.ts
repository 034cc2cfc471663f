// What the mock model was asked since the last look: each call of the returned function gives the requests
// made after the previous call (the mock is read through a getter, as tests start it in beforeAll).
import type { ChatRequest, MockLlm } from '../../scripts/mock-llm.js';

export function modelCallsSince(llm: () => MockLlm): () => ChatRequest[] {
  let seen = 0;
  return () => {
    const calls = llm().requests.slice(seen);
    seen = llm().requests.length;
    return calls;
  };
}
