// The note plugin's graph: the Note type, notes(contactId), Contact.notes and noteCreate.
import {
  builder,
  ContactObject,
  costs,
  extendCoreType,
  limited,
} from '../../src/plugin-sdk/index.js';
import { contactNotes, createNote, listNotes, NOTE_BODY_MAX } from './service.js';
import type { Note } from './tables.js';

// Every type a plugin defines starts with its id (tests/graph/naming.test.ts).
export const NoteObject = builder.objectRef<Note>('Note').implement({
  description: 'A note kept on a contact.',
  fields: (t) => ({
    id: t.expose('id', { type: 'UUID' }),
    contactId: t.expose('contactId', { type: 'UUID' }),
    body: t.exposeString('body'),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    authorId: t.expose('authorId', {
      type: 'UUID',
      nullable: true,
      description: 'The account that wrote the note.',
    }),
  }),
});

builder.queryFields((t) => ({
  notes: t.field({
    type: [NoteObject],
    description: "A contact's notes, newest first.",
    authScopes: { access: { scope: 'notes:read' } },
    args: {
      contactId: t.arg({ type: 'UUID', required: true }),
      first: t.arg.int({ required: false }),
    },
    resolve: (_root, args, ctx) => listNotes(ctx, args.contactId, args.first),
  }),
}));

builder.mutationFields((t) => ({
  noteCreate: t.field({
    type: NoteObject,
    description: 'Adds a note to a contact of the workspace.',
    authScopes: { access: { scope: 'notes:write' } },
    args: {
      contactId: t.arg({ type: 'UUID', required: true }),
      // Held to its cap before anything runs, refused with the plugin's own reason.
      body: t.arg.string({
        required: true,
        extensions: limited({ maxLength: NOTE_BODY_MAX, tooLong: 'note_body_too_long' }),
      }),
    },
    resolve: (_root, args, ctx) => createNote(ctx, args.contactId, args.body),
  }),
}));

// A field on a core type: its own resolver, given the contact's id only. Reached through
// a contact, it needs no scope of its own (a scope grants everything its entry point
// reaches, SPEC 5).
extendCoreType(ContactObject, 'notes', (t) =>
  t.field({
    type: [NoteObject],
    description: "The contact's notes, newest first.",
    args: { first: t.arg.int({ required: false }) },
    // A DataLoader reads every contact of a page at once: the rows are the cost.
    extensions: costs({ cost: 0 }),
    resolve: (contact, args, ctx) => contactNotes(ctx, contact.id, args.first),
  }),
);
