import { describe, expect, it, vi } from 'vitest';
import { newOperationId } from '../../../../shared/completions/completion.js';

describe('generated operation ids', () => {
  it('are version 7 UUIDs that sort by the time they were made', () => {
    vi.useFakeTimers();
    try {
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        ids.push(newOperationId());
        vi.advanceTimersByTime(1);
      }
      for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect([...ids].sort()).toEqual(ids);
      expect(parseInt(ids[0]!.replace('-', '').slice(0, 12), 16)).toBe(Date.now() - 5);
    } finally {
      vi.useRealTimers();
    }
  });

  it('differ within one millisecond', () => {
    const ids = new Set(Array.from({ length: 1000 }, newOperationId));
    expect(ids.size).toBe(1000);
  });
});
