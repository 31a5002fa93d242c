import type { GraphiQLOptions } from 'graphql-yoga';

/**
 * The operation the interactive page opens with. Its comments say where the sign-in comes
 * from; no password is ever written into the page. It stays inside SPEC 8.2's anonymous
 * caps (comments count as tokens), since whoever runs it is not signed in yet.
 */
export const LOGIN_OPERATION = `# Sign in first: fill in the variables below, then
# run this (the run button or Ctrl-Enter). The page keeps
# the session cookie: later operations run as you, and
# the schema reloads. \`svc dev\` prints the email and
# password of its first admin when it starts ("sign in
# as ... with password ..."); elsewhere an admin comes
# from \`svc account:create-admin\`.
mutation Login($email: String!, $password: String!) {
  login(email: $email, password: $password) {
    me { id email name role }
  }
}
`;

/** Placeholders, not a sign-in: the graph server does not know the dev admin. */
export const LOGIN_VARIABLES = {
  email: 'the email svc dev printed',
  password: 'the password svc dev printed',
};

const LOGIN_TAB = { query: LOGIN_OPERATION, variables: JSON.stringify(LOGIN_VARIABLES, null, 2) };

export const INTERACTIVE_PAGE_OPTIONS: GraphiQLOptions = {
  title: 'svc GraphQL',
  defaultTabs: [LOGIN_TAB],
  defaultEditorToolsVisibility: 'variables',
};

/**
 * On a first visit (nothing stored yet), stores the login's placeholders as GraphiQL's
 * variables: GraphiQL 5 opens the first of `defaultTabs` with its variables editor empty,
 * filling it from Yoga's `variables` option or else from what it stored, and the option
 * would replace what the person typed on every reload.
 */
const SEED_VARIABLES = `
  try {
    if (localStorage.getItem('graphiql:tabState') === null &&
        localStorage.getItem('graphiql:variables') === null) {
      localStorage.setItem('graphiql:variables', ${JSON.stringify(LOGIN_TAB.variables).replaceAll('<', '\\u003c')});
    }
  } catch (error) {}
`;

/**
 * Reloads GraphiQL's schema once a `login` succeeds, so completion and docs follow the
 * session at once: the page's fetcher calls `globalThis.fetch` on every request, so this
 * wraps it and, on a JSON answer with `data.login` and no errors, presses the page's own
 * "Re-fetch GraphQL schema" button (GraphiQL keeps its schema in React state, out of
 * reach of anything else).
 */
const REFETCH_AFTER_LOGIN = `
  var button = '[aria-label^="Re-fetch GraphQL schema"]';
  function refetchSchema() {
    var found = document.querySelector(button);
    if (found && !found.disabled) found.click();
  }
  function watch(response) {
    if ((response.headers.get('content-type') || '').indexOf('json') === -1) return;
    response.clone().json().then(function (body) {
      if (body && body.data && body.data.login && !body.errors) refetchSchema();
    }, function () {});
  }
  var pageFetch = globalThis.fetch;
  globalThis.fetch = function () {
    var answer = pageFetch.apply(this, arguments);
    answer.then(watch, function () {});
    return answer;
  };
`;

/** Runs before GraphiQL's bundle, so GraphiQL finds the variables and fetch it wraps. */
export const PAGE_SCRIPT = `<script data-svc="interactive-page">
(function () {${SEED_VARIABLES}${REFETCH_AFTER_LOGIN}})();
</script>
`;

const ROOT = '<div id="root"></div>';

/**
 * The interactive page: render-graphiql's bundled GraphiQL (no CDN, so it works offline)
 * with the options above and the page script placed before the bundle runs.
 * About 9 MB; the HTTP layer renders it once and keeps it (src/http/interactive-page-route.ts).
 * The bundle is imported on first use: held as module source it costs ~30 MB of heap in
 * every process, and only SVC_DEV_GRAPHIQL ever serves it.
 */
export async function renderInteractivePage(): Promise<string> {
  const { renderGraphiQL } = await import('@graphql-yoga/render-graphiql');
  const html = renderGraphiQL(INTERACTIVE_PAGE_OPTIONS);
  const root = html.indexOf(ROOT);
  // A render-graphiql release that moved its root would lose the script without this.
  if (root === -1) throw new Error('render-graphiql changed its page: no root element');
  return html.slice(0, root) + PAGE_SCRIPT + html.slice(root);
}
