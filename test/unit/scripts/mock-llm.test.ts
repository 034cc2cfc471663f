// The mock model's scripted tool calls: a user message that asks for a call of an offered function.
import { describe, expect, it } from 'vitest';
import { scriptedCall } from '../../../scripts/mock-llm.js';

const offered = [{ function: { name: 'lookup' } }, { function: { name: 'python' } }];

describe('scripted tool calls', () => {
  it('calls an offered function with the JSON arguments of a /call line', () => {
    expect(scriptedCall('Where is it?\n/call lookup {"order_id": "A-17"}', offered)).toEqual({
      name: 'lookup',
      arguments: { order_id: 'A-17' },
    });
    expect(scriptedCall('/call lookup', offered)).toEqual({ name: 'lookup', arguments: {} });
  });

  it('gives the code interpreter the lines after /call python as its code', () => {
    expect(scriptedCall('/call python\nimport math\nprint(math.pi)', offered)).toEqual({
      name: 'python',
      arguments: { code: 'import math\nprint(math.pi)' },
    });
  });

  it(
    'asks for nothing when the function is not offered, the arguments are not an object, or there is no /call ' +
      'line',
    () => {
      expect(scriptedCall('/call delete_everything {}', offered)).toBeUndefined();
      expect(scriptedCall('/call lookup [1, 2]', offered)).toBeUndefined();
      expect(scriptedCall('/call lookup {not json', offered)).toBeUndefined();
      expect(scriptedCall('please /call lookup {}', offered)).toBeUndefined();
    },
  );
});
