import { createHash } from 'node:crypto';
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

/** Where the page's assets are served, each under a name holding its content's hash. */
export const INTERACTIVE_ASSETS_PATH = '/api/interactive-page/';

export interface InteractiveAsset {
  body: Buffer;
  contentType: string;
}

export interface InteractivePage {
  /** The page itself: a few kilobytes naming its assets. */
  html: string;
  /** By file name (`graphiql.<hash>.js`): what never changes under its name. */
  assets: Map<string, InteractiveAsset>;
}

/** `<name>.<first 16 hex digits of its sha256>.<ext>`: a new bundle gets a new name. */
function hashedName(name: string, ext: string, body: Buffer): string {
  return `${name}.${createHash('sha256').update(body).digest('hex').slice(0, 16)}.${ext}`;
}

/** JSON inside a script element: `<` written as an escape, so no text closes the element. */
function scriptJson(value: unknown): string {
  return JSON.stringify(value).replaceAll('<', '\\u003c');
}

/**
 * The interactive page: render-graphiql's bundled GraphiQL (no CDN, so it works offline)
 * with the options above and the page script placed before the bundle runs. The bundle
 * (about 9 MB: GraphiQL, its styles, three editor workers and an icon) is served apart, as
 * assets named after their content, which a browser keeps and never asks for again
 * (src/http/interactive-page-route.ts); the page is a few kilobytes. The bundle is
 * imported on first use: held as module source it costs ~30 MB of heap in every process,
 * and only SVC_DEV_GRAPHIQL ever serves it.
 */
export async function buildInteractivePage(): Promise<InteractivePage> {
  const bundle = await import('@graphql-yoga/render-graphiql/graphiql');
  const assets = new Map<string, InteractiveAsset>();
  const add = (name: string, ext: string, body: Buffer, contentType: string) => {
    const file = hashedName(name, ext, body);
    assets.set(file, { body, contentType });
    return `${INTERACTIVE_ASSETS_PATH}${file}`;
  };
  const script = (name: string, text: string) =>
    add(name, 'js', Buffer.from(text, 'utf8'), 'text/javascript; charset=utf-8');
  const icon = /^data:([^;,]+);base64,(.*)$/s.exec(bundle.favicon);
  const favicon = icon
    ? add('favicon', 'ico', Buffer.from(icon[2] as string, 'base64'), icon[1] as string)
    : bundle.favicon;
  const css = add('graphiql', 'css', Buffer.from(bundle.css, 'utf8'), 'text/css; charset=utf-8');
  // Monaco's editor workers, by the label it asks for; same-origin URLs, as the blob URLs
  // render-graphiql made of them were.
  const workers = {
    editorWorkerService: script('editor-worker', bundle.editorWorkerService),
    json: script('json-worker', bundle.jsonWorker),
    graphql: script('graphql-worker', bundle.graphqlWorker),
  };
  const graphiql = script('graphiql', bundle.js);
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8" />
<title>${INTERACTIVE_PAGE_OPTIONS.title}</title>
<link rel="icon" href="${favicon}" />
<link rel="stylesheet" href="${css}" />
</head>
<body id="body" class="no-focus-outline">
<noscript>The interactive GraphQL page needs JavaScript.</noscript>
<div id="root"></div>
${PAGE_SCRIPT}<script>
self.MonacoEnvironment = {
  globalAPI: false,
  getWorkerUrl: function (moduleId, label) { return ${scriptJson(workers)}[label]; },
};
</script>
<script src="${graphiql}"></script>
<script>
YogaGraphiQL.renderYogaGraphiQL(document.querySelector('#root'), ${scriptJson(INTERACTIVE_PAGE_OPTIONS)});
</script>
</body>
</html>
`;
  return { html, assets };
}
