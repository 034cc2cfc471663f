// A session document's recent messages: the last ones of its conversation, kept on the session itself
// within RECENT_LIMITS, so a turn reads its history in the same point read that checks the session.
/** A message as its session document keeps it, for the next turn's history. */
export interface RecentMessage {
  sender: 'User' | 'Assistant';
  text: string;
  timestamp: string;
  operation_id: string;
  blocked?: true;
}

/** Bounds of a session document's recent messages: it stays small however long the conversation. */
export const RECENT_LIMITS = { messages: 40, chars: 32_000 };

/** The newest messages of `list` within RECENT_LIMITS, and whether any had to go. */
function keepRecent(list: readonly RecentMessage[]): { recent: RecentMessage[]; trimmed: boolean } {
  let chars = 0;
  let from = list.length;
  while (
    from > 0 &&
    list.length - from < RECENT_LIMITS.messages &&
    chars + (list[from - 1]?.text.length ?? 0) <= RECENT_LIMITS.chars
  ) {
    from--;
    chars += list[from]?.text.length ?? 0;
  }
  return { recent: list.slice(from), trimmed: from > 0 };
}

/** What a session document keeps of a message. */
export const recentOf = ({ sender, text, timestamp, operation_id, blocked }: RecentMessage): RecentMessage => ({
  sender,
  text,
  timestamp,
  operation_id,
  ...(blocked ? { blocked } : {}),
});

/** A session with `messages` added to its recent ones (the oldest dropped past the limits), active at `at`. */
export function withRecent<S extends { updated_on: string; recent?: RecentMessage[]; recent_complete?: boolean }>(
  session: S,
  messages: readonly RecentMessage[],
  at: string,
): S {
  const { recent, trimmed } = keepRecent([...(session.recent ?? []), ...messages]);
  return { ...session, updated_on: at, recent, recent_complete: session.recent_complete === true && !trimmed };
}
