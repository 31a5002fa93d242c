import { describe, expect, test } from '@jest/globals';
import { createSlots } from '../../../src/http/guards/slots.js';

describe('createSlots', () => {
  test('gives one key up to perKey slots', () => {
    const slots = createSlots({ perKey: 2 });
    expect(slots.tryTake('a')).not.toBeNull();
    expect(slots.tryTake('a')).not.toBeNull();
    expect(slots.tryTake('a')).toBeNull();
    expect(slots.held('a')).toBe(2);
  });

  test('counts each key on its own', () => {
    const slots = createSlots({ perKey: 1 });
    expect(slots.tryTake('a')).not.toBeNull();
    expect(slots.tryTake('b')).not.toBeNull();
    expect(slots.tryTake('a')).toBeNull();
    expect(slots.held()).toBe(2);
  });

  test('refuses every key once the ceiling is reached', () => {
    const slots = createSlots({ perKey: 5, ceiling: 3 });
    for (const key of ['a', 'a', 'b']) expect(slots.tryTake(key)).not.toBeNull();
    expect(slots.tryTake('c')).toBeNull();
    expect(slots.tryTake('a')).toBeNull();
  });

  test('frees a slot for the next caller on release', () => {
    const slots = createSlots({ perKey: 1 });
    const release = slots.tryTake('a');
    release?.();
    expect(slots.held('a')).toBe(0);
    expect(slots.tryTake('a')).not.toBeNull();
  });

  test('frees a ceiling slot for another key on release', () => {
    const slots = createSlots({ perKey: 5, ceiling: 1 });
    const release = slots.tryTake('a');
    expect(slots.tryTake('b')).toBeNull();
    release?.();
    expect(slots.tryTake('b')).not.toBeNull();
  });

  test('ignores a second release of the same slot', () => {
    const slots = createSlots({ perKey: 2, ceiling: 2 });
    const first = slots.tryTake('a');
    const second = slots.tryTake('a');
    first?.();
    first?.();
    expect(slots.held('a')).toBe(1);
    expect(slots.held()).toBe(1);
    expect(slots.tryTake('a')).not.toBeNull();
    expect(slots.tryTake('a')).toBeNull();
    second?.();
    expect(slots.held()).toBe(1);
  });

  test('has no ceiling unless given one', () => {
    const slots = createSlots({ perKey: 1 });
    for (let i = 0; i < 1000; i++) expect(slots.tryTake(`key-${i}`)).not.toBeNull();
    expect(slots.held()).toBe(1000);
  });

  test('forgets a key whose slots are all released', () => {
    const slots = createSlots({ perKey: 20 });
    const releases = Array.from({ length: 20 }, () => slots.tryTake('user-1'));
    expect(slots.tryTake('user-1')).toBeNull();
    for (const release of releases) release?.();
    expect(slots.held('user-1')).toBe(0);
    expect(slots.held()).toBe(0);
  });
});
