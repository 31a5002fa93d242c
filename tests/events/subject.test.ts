// The subject id every event's data carries (src/events/subject.ts), without a database.
import { describe, expect, test } from '@jest/globals';
import { subjectKey, withSubject } from '../../src/events/subject.js';

describe('subjectKey', () => {
  test('is the name’s first segment in camelCase plus Id', () => {
    expect(subjectKey('contact.identity_added')).toBe('contactId');
    expect(subjectKey('task.completed')).toBe('taskId');
    expect(subjectKey('custom_field.created')).toBe('customFieldId');
  });
});

describe('withSubject', () => {
  test('puts the subject id into data under the name’s first segment plus Id', () => {
    expect(withSubject('contact.renamed', 'c1', { from: 'A', to: 'B' })).toEqual({
      contactId: 'c1',
      from: 'A',
      to: 'B',
    });
    expect(withSubject('custom_field.created', 'f1')).toEqual({ customFieldId: 'f1' });
  });

  test('takes a key a contract fixes instead', () => {
    expect(withSubject('chat.message.received', 'v1', {}, 'conversation_id')).toEqual({
      conversation_id: 'v1',
    });
  });

  test('keeps data naming the same subject and refuses data naming another', () => {
    expect(withSubject('note.created', 'n1', { noteId: 'n1' })).toEqual({ noteId: 'n1' });
    expect(() => withSubject('note.created', 'n1', { noteId: 'n2' })).toThrow(
      'event note.created: data.noteId is not its subject n1',
    );
  });
});
