import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod';
import { isValidText, TEXT_MAX } from '../limits.js';
import { serviceVersion } from '../meta/version.js';

/** SPEC 4.4 / 8.1: agent counts stop here and then say `capped: true`. */
export const AGENT_COUNT_CAP = 200;

/** The answer of one graph operation run as the token's user. */
export interface GraphAnswer {
  data?: Record<string, unknown> | null;
  errors?: { message: string }[];
}

/**
 * Runs a graph operation as the caller, or null when the bearer token does not work
 * (expired, revoked, unknown): every tool then answers `invalid token`.
 */
export type GraphRunner = (
  query: string,
  variables: Record<string, unknown>,
) => Promise<GraphAnswer>;

/** A graph refusal, answered to the model as a tool error carrying the graph's message. */
class ToolFailure extends Error {}

async function run<T>(
  graph: GraphRunner,
  query: string,
  variables: Record<string, unknown>,
): Promise<T> {
  const answer = await graph(query, variables);
  const [first] = answer.errors ?? [];
  if (first) throw new ToolFailure(withoutVariables(first.message));
  if (!answer.data) throw new ToolFailure('the graph answered no data');
  return answer.data as T;
}

/**
 * A graph message names the tools' internal operation variables (`Variable "$date" got
 * invalid value …`); the model knows only its own arguments, so that prefix is dropped.
 * The tools' inputs are checked before they reach the graph; this is the backstop.
 */
function withoutVariables(message: string): string {
  return message.replace(/^Variable "\$\w+" got invalid value .*?; /s, 'invalid argument: ');
}

function failure(message: string): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: message }] };
}

/** Structured content, mirrored as JSON text for clients that only read text. */
function answer(structured: Record<string, unknown>): CallToolResult {
  return {
    structuredContent: structured,
    content: [{ type: 'text', text: JSON.stringify(structured) }],
  };
}

/** "Today" for the agent tools is the UTC calendar date (documented in docs/agents.md). */
export function utcToday(now = new Date()): string {
  return now.toISOString().slice(0, 10);
}

const readOnly = { readOnlyHint: true, destructiveHint: false, openWorldHint: false } as const;
const datePattern = /^(\d{4})-(\d{2})-(\d{2})$/;

/** A calendar day that exists (no 2026-02-30), refused by the tool's own input check. */
function isCalendarDay(text: string): boolean {
  const [, y, m, d] = (datePattern.exec(text) ?? []).map(Number);
  if (y === undefined || m === undefined || d === undefined) return false;
  const date = new Date(Date.UTC(y, m - 1, d));
  return date.getUTCFullYear() === y && date.getUTCMonth() === m - 1 && date.getUTCDate() === d;
}

interface Page<T> {
  edges: { node: T }[];
  pageInfo: { hasNextPage: boolean };
}

interface GraphTask {
  id: string;
  title: string;
  dueOn: string | null;
  status: string;
  priority: string;
  contactId?: string | null;
  assigneeId: string;
  contact?: { name: string } | null;
}

interface GraphIdentity {
  channel: string;
  identifier: string;
  displayName: string | null;
}

const identityShape = z.object({
  channel: z.string().describe('The channel, e.g. email, phone, whatsapp.'),
  identifier: z.string().describe('The address on that channel (email address, number, handle).'),
  display_name: z.string().nullable().describe('The name shown on that channel, if known.'),
});

const taskShape = {
  id: z.string().describe('Task id (UUID).'),
  title: z.string(),
  due_on: z.string().nullable().describe('Due date, YYYY-MM-DD; null when undated.'),
  status: z.string().describe('Always `open` here: only open tasks are listed.'),
  priority: z.string(),
  assignee_id: z.string().describe('The user who owns the task (UUID).'),
};

function identityOut(identity: GraphIdentity) {
  return {
    channel: identity.channel,
    identifier: identity.identifier,
    display_name: identity.displayName,
  };
}

function taskOut(task: GraphTask) {
  return {
    id: task.id,
    title: task.title,
    due_on: task.dueOn,
    status: task.status,
    priority: task.priority,
    assignee_id: task.assigneeId,
  };
}

const WORKLOAD = `query McpWorkload($today: Date!, $cap: Int!) {
  dueToday: tasks(date: $today, first: $cap) { edges { node { id } } pageInfo { hasNextPage } }
  overdue: tasks(dueBefore: $today, first: $cap) { edges { node { id } } pageInfo { hasNextPage } }
}`;

const MY_TASKS = `query McpMyTasks($date: Date, $dueBefore: Date, $cap: Int!) {
  tasks(date: $date, dueBefore: $dueBefore, first: $cap) {
    edges { node { id title dueOn status priority contactId assigneeId contact { name } } }
    pageInfo { hasNextPage }
  }
}`;

const FIND_CONTACTS = `query McpFindContacts($q: String!, $first: Int!) {
  contacts(q: $q, first: $first) {
    edges { node { id name identities { channel identifier displayName } tasks(first: 1) { id } } }
    pageInfo { hasNextPage }
  }
}`;

const GET_CONTACT = `query McpGetContact($id: UUID!, $cap: Int!) {
  contact(id: $id) {
    id name
    identities { channel identifier displayName }
    tasks(first: $cap) { id title dueOn status priority assigneeId }
  }
}`;

/**
 * The agent endpoint's tools (SPEC 4.4). Each one runs graph operations as the token's
 * user through `graph`, so scopes and capabilities apply exactly as on /api/graphql.
 * `graph` null means the bearer token does not work: every tool answers `invalid token`.
 */
export function createMcpServer(graph: GraphRunner | null, now: () => Date = () => new Date()) {
  const server = new McpServer(
    { name: 'svc-crm', version: serviceVersion },
    {
      instructions:
        'Read-only access to a workspace CRM as the user who owns the API token. Use ' +
        'workload_summary for "how busy am I", list_my_tasks for the tasks themselves, ' +
        'find_contacts to look a person or company up, get_contact for everything about one ' +
        'contact. Dates are UTC calendar dates (YYYY-MM-DD).',
    },
  );

  /** Wraps a tool body: invalid token first, then graph refusals as tool errors. */
  function guarded<A>(body: (graph: GraphRunner, args: A) => Promise<Record<string, unknown>>) {
    return async (args: A): Promise<CallToolResult> => {
      if (!graph) return failure('invalid token');
      try {
        return answer(await body(graph, args));
      } catch (error) {
        if (error instanceof ToolFailure) return failure(error.message);
        throw error;
      }
    };
  }

  server.registerTool(
    'workload_summary',
    {
      title: 'Workload summary',
      description:
        "Counts the token owner's own open tasks that are due today and those that are " +
        'overdue (due before today). Use it for a quick "how busy am I / what is late" ' +
        'overview; call list_my_tasks to see the tasks themselves. Only tasks assigned to ' +
        'the token owner are counted. "Today" is the UTC date, returned as `today`. Counts ' +
        'stop at 200: when `capped` is true, a count of 200 means "200 or more". Needs ' +
        'scope tasks:read.',
      inputSchema: {},
      outputSchema: {
        today: z.string().describe('The UTC date counted as today (YYYY-MM-DD).'),
        due_today: z.number().int().describe('Open tasks due today (at most 200).'),
        overdue: z.number().int().describe('Open tasks due before today (at most 200).'),
        capped: z
          .boolean()
          .describe('True when a count stopped at 200; that count means at least 200.'),
      },
      annotations: { title: 'Workload summary', ...readOnly },
    },
    guarded(async (graph) => {
      const today = utcToday(now());
      const data = await run<{ dueToday: Page<{ id: string }>; overdue: Page<{ id: string }> }>(
        graph,
        WORKLOAD,
        { today, cap: AGENT_COUNT_CAP },
      );
      return {
        today,
        due_today: data.dueToday.edges.length,
        overdue: data.overdue.edges.length,
        capped: data.dueToday.pageInfo.hasNextPage || data.overdue.pageInfo.hasNextPage,
      };
    }),
  );

  server.registerTool(
    'list_my_tasks',
    {
      title: 'List my tasks',
      description:
        "Lists the token owner's own open tasks, with the name of the contact each is about. " +
        'Give `day` (YYYY-MM-DD) for the tasks due that day, or `overdue: true` for the ' +
        'backlog of tasks due before today (UTC); with neither, lists the tasks due today ' +
        '(UTC). Never lists tasks assigned to other users; for all open work on one contact ' +
        'use get_contact. At most 200 tasks, ordered by due date; `capped` true means more ' +
        'exist. Needs scope tasks:read.',
      inputSchema: {
        day: z
          .string()
          .refine(isCalendarDay, 'a calendar date written YYYY-MM-DD')
          .optional()
          .describe('The due date to list, YYYY-MM-DD. Leave out when `overdue` is true.'),
        overdue: z
          .boolean()
          .optional()
          .describe('True for every open task due before today (UTC). Not with `day`.'),
      },
      outputSchema: {
        day: z.string().nullable().describe('The day listed, or null for the overdue backlog.'),
        overdue: z.boolean().describe('True when this is the overdue backlog.'),
        today: z.string().describe('The UTC date counted as today (YYYY-MM-DD).'),
        tasks: z.array(
          z.object({
            ...taskShape,
            contact_id: z.string().nullable().describe('The contact the task is about, if any.'),
            contact_name: z.string().nullable().describe("That contact's name, if any."),
          }),
        ),
        capped: z.boolean().describe('True when only the first 200 tasks are listed.'),
      },
      annotations: { title: 'List my tasks', ...readOnly },
    },
    guarded<{ day?: string; overdue?: boolean }>(async (graph, args) => {
      if (args.day !== undefined && args.overdue) {
        throw new ToolFailure('give either `day` or `overdue: true`, not both');
      }
      const today = utcToday(now());
      const overdue = args.overdue === true;
      const day = overdue ? null : (args.day ?? today);
      const data = await run<{ tasks: Page<GraphTask> }>(graph, MY_TASKS, {
        date: day,
        dueBefore: overdue ? today : null,
        cap: AGENT_COUNT_CAP,
      });
      return {
        day,
        overdue,
        today,
        tasks: data.tasks.edges.map(({ node }) => ({
          ...taskOut(node),
          contact_id: node.contactId ?? null,
          contact_name: node.contact?.name ?? null,
        })),
        capped: data.tasks.pageInfo.hasNextPage,
      };
    }),
  );

  server.registerTool(
    'find_contacts',
    {
      title: 'Find contacts',
      description:
        'Searches the workspace contacts by a name fragment, a channel display name fragment ' +
        'or 3+ digits of a phone number or other identifier. Use it to find a contact id ' +
        'before get_contact. Each contact carries its channel addresses and ' +
        '`has_open_work`: true when any user (not only the token owner) has an open task ' +
        'about it. Ordered by name. Needs scope contacts:read.',
      inputSchema: {
        query: z
          .string()
          .min(1)
          .max(TEXT_MAX.search)
          .refine(isValidText, 'not valid text (no NUL, no lone surrogate)')
          .describe('Name fragment, display name fragment or digits.'),
        limit: z
          .number()
          .int()
          .min(1)
          .max(50)
          .optional()
          .describe('How many contacts to return, 1 to 50. @default 20'),
      },
      outputSchema: {
        contacts: z.array(
          z.object({
            id: z.string().describe('Contact id (UUID), for get_contact.'),
            name: z.string(),
            identities: z.array(identityShape).describe('Channel addresses, oldest first.'),
            has_open_work: z
              .boolean()
              .describe('True when any user has an open task about this contact.'),
          }),
        ),
        has_more: z.boolean().describe('True when more contacts match than were returned.'),
      },
      annotations: { title: 'Find contacts', ...readOnly },
    },
    guarded<{ query: string; limit?: number }>(async (graph, args) => {
      type Node = {
        id: string;
        name: string;
        identities: GraphIdentity[];
        tasks: { id: string }[];
      };
      const data = await run<{ contacts: Page<Node> }>(graph, FIND_CONTACTS, {
        q: args.query,
        first: args.limit ?? 20,
      });
      return {
        contacts: data.contacts.edges.map(({ node }) => ({
          id: node.id,
          name: node.name,
          identities: node.identities.map(identityOut),
          has_open_work: node.tasks.length > 0,
        })),
        has_more: data.contacts.pageInfo.hasNextPage,
      };
    }),
  );

  server.registerTool(
    'get_contact',
    {
      title: 'Get contact',
      description:
        'One contact in full: its channel addresses (email, phone, chat handles) and every ' +
        'open task about it, whoever owns the task; `assignee_id` names each task owner. ' +
        'Use after find_contacts gave you the id. At most 200 tasks; `capped` true means ' +
        'there may be more. Needs scope contacts:read.',
      inputSchema: { id: z.string().uuid().describe('The contact id (UUID).') },
      outputSchema: {
        id: z.string(),
        name: z.string(),
        identities: z.array(identityShape).describe('Channel addresses, oldest first.'),
        open_tasks: z
          .array(z.object(taskShape))
          .describe('Open tasks about this contact across every user, by due date.'),
        capped: z.boolean().describe('True when 200 tasks were listed: there may be more.'),
      },
      annotations: { title: 'Get contact', ...readOnly },
    },
    guarded<{ id: string }>(async (graph, args) => {
      type Node = { id: string; name: string; identities: GraphIdentity[]; tasks: GraphTask[] };
      const data = await run<{ contact: Node }>(graph, GET_CONTACT, {
        id: args.id,
        cap: AGENT_COUNT_CAP,
      });
      const { contact } = data;
      return {
        id: contact.id,
        name: contact.name,
        identities: contact.identities.map(identityOut),
        open_tasks: contact.tasks.map(taskOut),
        capped: contact.tasks.length >= AGENT_COUNT_CAP,
      };
    }),
  );

  return server;
}
