// What the fields plugin's tests share: its operations and a definition input builder.
export const FIELD_FIELDS =
  'id name label kind options currency position archived subFields { name label kind options currency }';
export const DEFINE = `mutation ($input: FieldDefineInput!) { defineField(input: $input) { ${FIELD_FIELDS} } }`;
export const FIELDS = `{ fields { ${FIELD_FIELDS} } }`;
export const WRITE = `mutation ($contactId: UUID!, $values: JSON!) {
  writeContactFields(contactId: $contactId, values: $values) { id name fieldValues }
}`;
export const READ = `query ($id: UUID!, $name: String!) { contact(id: $id) { field(name: $name) } }`;
export const ENTRY_FIELDS = 'id contactId field values';
export const ADD_ENTRY = `mutation ($contactId: UUID!, $field: String!, $values: JSON!) {
  addContactFieldEntry(contactId: $contactId, field: $field, values: $values) { ${ENTRY_FIELDS} }
}`;
export const UPDATE_ENTRY = `mutation ($contactId: UUID!, $field: String!, $entryId: UUID!, $values: JSON!) {
  updateContactFieldEntry(contactId: $contactId, field: $field, entryId: $entryId, values: $values) { ${ENTRY_FIELDS} }
}`;
export const DELETE_ENTRY = `mutation ($contactId: UUID!, $field: String!, $entryId: UUID!) {
  deleteContactFieldEntry(contactId: $contactId, field: $field, entryId: $entryId)
}`;

export interface FieldData {
  id: string;
  name: string;
  label: string;
  kind: string;
  options: string[] | null;
  currency: string | null;
  position: number;
  archived: boolean;
  subFields: unknown[] | null;
}

/** A definition input: `renewsOn` is labelled `Renews on`. */
export function fieldInput(name: string, kind: string, extra: Record<string, unknown> = {}) {
  const words = name.replace(/([A-Z])/g, ' $1').toLowerCase();
  return { name, label: words.charAt(0).toUpperCase() + words.slice(1), kind, ...extra };
}
