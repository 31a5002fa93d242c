// The note plugin (SPEC 2.12): notes kept on a contact. It is the reference plugin that
// docs/plugins.md walks through step by step; everything it needs from the core comes
// from the SDK.
import { definePlugin } from '../../src/plugin-sdk/index.js';
// Importing the graph module registers the plugin's types and fields on the builder.
import './graph.js';
import { noteContactData } from './contact-data.js';

export { NOTE_BODY_MAX } from './service.js';

export default definePlugin({
  id: 'note',
  // Tokens may be narrowed to notes:read / notes:write (`-scope notes:read`).
  areas: ['notes'],
  // Recorded in the write's transaction; webhooks and live streams see it.
  events: ['note.created'],
  // Notes reference contacts: they go with an erased contact and move on a merge.
  contactData: noteContactData,
  reasons: {
    note_body_required: { code: 'VALIDATION', message: 'a note needs a body' },
    note_body_too_long: {
      code: 'VALIDATION',
      message: (meta) => `a note body holds at most ${String(meta.max)} characters`,
    },
  },
});
