import type { Context } from '../context.js';
import { listContacts } from '../contacts/service.js';
import type { Contact } from '../contacts/tables.js';
import { createTask } from '../tasks/service.js';
import type { SeedStep } from './index.js';

// Demo tasks over the next four weeks, most about a demo contact, shared between the two
// accounts; a few are already done, as on any real list.

/** Title, contact (null: none), working days from the seed's day, priority, owner, done. */
type DemoTask = [
  title: string,
  contact: string | null,
  inDays: number,
  priority: 'low' | 'normal' | 'high' | 'urgent',
  owner: 'admin' | 'member',
  done?: 'done',
];

export const DEMO_TASKS: readonly DemoTask[] = [
  ['Call Lucía about the spring order', 'Lucía Fernández', 0, 'high', 'admin'],
  ['Send the revised quote for the office refit', 'Marc Puig', 1, 'urgent', 'admin'],
  ['Confirm delivery slots for next month', 'Javier Ortega', 1, 'normal', 'member'],
  ['Follow up on invoice 1042', 'Oliver Hughes', 2, 'high', 'member'],
  ['Prepare the demo for Northwind', 'Priya Shah', 3, 'high', 'admin'],
  ['Book a site visit', 'Hannah Schmidt', 4, 'normal', 'member'],
  ['Send the catering menu options', 'Carmen Vidal', 5, 'normal', 'member'],
  ['Review the contract draft with legal', 'Elena Navarro', 5, 'high', 'admin'],
  ['Ask for a testimonial', 'Aisha Okafor', 6, 'low', 'member'],
  ['Check stock of the blue tea tins', 'Grace Liu', 7, 'normal', 'member'],
  ['Plan the quarterly review', null, 8, 'normal', 'admin'],
  ['Send the solar panel brochure', 'Samuel Adeyemi', 9, 'low', 'member'],
  ['Renew the shipping insurance', 'Tom Becker', 10, 'high', 'admin'],
  ['Arrange a tasting', 'Hugo Lefèvre', 11, 'normal', 'member'],
  ['Update the price list for 2nd quarter', null, 12, 'normal', 'admin'],
  ['Introduce Mateo to our designer', 'Mateo Rossi', 13, 'low', 'member'],
  ['Collect feedback on the new bikes', 'Andrés Molina', 14, 'normal', 'member'],
  ['Negotiate the annual maintenance plan', 'Diego Herrera', 15, 'high', 'admin'],
  ['Send the translated brochure for approval', 'Nadia Petrova', 16, 'normal', 'member'],
  ['Invite to the customer evening', 'Emma Johansson', 17, 'low', 'member'],
  ['Check in after the first month', 'Noah Williams', 18, 'normal', 'admin'],
  ['Quote for the spring flower order', 'Olivia Brown', 19, 'normal', 'member'],
  ['Send the holiday rota to the team', null, 20, 'low', 'admin'],
  ['Plan the reorder of coffee beans', 'Ben Carter', 22, 'normal', 'member'],
  ['Welcome call', 'Laura Gómez', -3, 'normal', 'member', 'done'],
  ['Send the signed agreement', 'Lukas Novak', -2, 'high', 'admin', 'done'],
  ['Set up the shared folder', 'Zoe Papadopoulos', -1, 'low', 'member', 'done'],
];

const DAY_MS = 86_400_000;

/** `YYYY-MM-DD` of the day `workingDays` Monday-to-Friday days after (or before) `today`. */
export function workingDay(today: Date, workingDays: number): string {
  const step = workingDays < 0 ? -1 : 1;
  let day = Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate());
  const isWeekend = (time: number) => [0, 6].includes(new Date(time).getUTCDay());
  while (isWeekend(day)) day += step * DAY_MS;
  for (let left = Math.abs(workingDays); left > 0; left -= 1) {
    day += step * DAY_MS;
    while (isWeekend(day)) day += step * DAY_MS;
  }
  return new Date(day).toISOString().slice(0, 10);
}

/** Every contact of the workspace, through the contacts service, by name. */
async function contactsByName(ctx: Context): Promise<Map<string, Contact>> {
  const byName = new Map<string, Contact>();
  let after: string | null = null;
  do {
    const page = await listContacts(ctx, { after });
    for (const { node } of page.edges) byName.set(node.name, node);
    after = page.pageInfo.hasNextPage ? page.pageInfo.endCursor : null;
  } while (after);
  return byName;
}

function contactNamed(contacts: Map<string, Contact>, name: string): Contact {
  const contact = contacts.get(name);
  if (!contact) throw new Error(`demo task names ${name}, who is no demo contact`);
  return contact;
}

/** The tasks, created by the admin through createTask and assigned to either account. */
export const tasksStep: SeedStep = {
  name: 'tasks',
  async run({ as, admin, member, today }) {
    const ctx = as(admin);
    const contacts = await contactsByName(ctx);
    for (const [title, contact, inDays, priority, owner, done] of DEMO_TASKS) {
      await createTask(ctx, {
        title,
        dueOn: workingDay(today, inDays),
        priority,
        status: done ? 'done' : 'open',
        contactId: contact === null ? null : contactNamed(contacts, contact).id,
        assigneeId: (owner === 'admin' ? admin : member).id,
      });
    }
    return { tasks: DEMO_TASKS.length };
  },
};
