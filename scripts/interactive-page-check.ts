// Opens the interactive page (SVC_DEV_GRAPHIQL) in headless Chromium and checks it as a
// person would: it opens with no error and with the schema, the login tab signs in, and
// the schema reloads right after. Screenshots go to --out. Not part of the jest suite: it
// needs a browser (Debian: `apt-get install chromium`) and a running `svc dev`.
//
//   npx tsx scripts/interactive-page-check.ts --url http://127.0.0.1:8080 \
//     --email admin@example.com --password '<printed by svc dev>' [--out /tmp]
import path from 'node:path';
import { parseArgs } from 'node:util';
import { chromium, type Page, type Request } from 'playwright-core';

const { values } = parseArgs({
  options: {
    url: { type: 'string', default: 'http://localhost:8080' },
    email: { type: 'string' },
    password: { type: 'string' },
    out: { type: 'string', default: '/tmp' },
    chromium: { type: 'string', default: '/usr/bin/chromium' },
  },
});
if (!values.email || !values.password) {
  console.error('--email and --password are required: svc dev prints them');
  process.exit(2);
}
const pageUrl = new URL('/api/graphql', values.url).toString();
const problems: string[] = [];

function check(ok: boolean, what: string): void {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) problems.push(what);
}

async function shot(page: Page, name: string): Promise<void> {
  const file = path.join(values.out as string, `interactive-page-${name}.png`);
  await page.screenshot({ path: file });
  console.log(`     screenshot ${file}`);
}

function isIntrospection(request: Request): boolean {
  return request.method() === 'POST' && (request.postData() ?? '').includes('__schema');
}

/** The text of the editor GraphiQL shows the answer in. */
function answerText(page: Page): Promise<string> {
  return page.locator('.graphiql-response').innerText();
}

const browser = await chromium.launch({
  executablePath: values.chromium,
  args: [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--no-first-run',
  ],
});
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));

  // 1. Open: GraphiQL introspects at once, anonymously (SVC_DEV_GRAPHIQL).
  const firstSchema = page.waitForResponse((response) => isIntrospection(response.request()));
  const opened = await page.goto(pageUrl);
  check(opened?.status() === 200, `GET ${pageUrl} answers 200`);
  check(
    ['br', 'gzip'].includes((await opened?.headerValue('content-encoding')) ?? ''),
    `the page comes compressed (${await opened?.headerValue('content-encoding')})`,
  );
  const schemaAnswer = await (await firstSchema).json();
  check(Boolean(schemaAnswer?.data?.__schema), 'the first introspection answers the schema');
  await page.locator('.graphiql-query-editor').waitFor();
  // Monaco lays text out with no-break spaces.
  const body = (await page.locator('body').innerText()).replaceAll('\u00a0', ' ');
  check(!/authentication required/i.test(body), 'no "authentication required" on the page');
  check(body.includes('mutation Login('), 'the page opens on the login tab');
  check(!body.includes(values.password), 'the page holds no password');
  check(
    body.includes('"email": "the email svc dev printed"'),
    'the variables hold placeholders for the email and password',
  );
  await shot(page, '1-opened');

  // 2. Sign in: the variables replaced by the printed email and password, then run.
  const variables = page.locator('.graphiql-editor-tool .graphiql-editor').first();
  await variables.click();
  await page.keyboard.press('ControlOrMeta+A');
  await page.keyboard.press('Delete');
  await page.keyboard.insertText(
    JSON.stringify({ email: values.email, password: values.password }),
  );
  const login = page.waitForResponse((response) =>
    (response.request().postData() ?? '').includes('mutation Login('),
  );
  const refetched = page.waitForRequest(isIntrospection);
  await page.locator('.graphiql-execute-button').click();
  const loginAnswer = await (await login).json();
  check(loginAnswer?.data?.login?.me?.email === values.email, 'the login tab signs in');
  const refetch = await Promise.race([
    refetched.then(() => true),
    new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 10_000)),
  ]);
  check(refetch, 'the schema is fetched again right after the login');
  await page.getByText('"login"').first().waitFor();
  await shot(page, '2-signed-in');

  // 3. The docs hold the schema: the explorer lists the root types.
  await page.locator('[aria-label^="Show Documentation Explorer"]').click();
  await page.locator('.graphiql-doc-explorer').getByText('Query', { exact: true }).waitFor();
  const docs = await page.locator('.graphiql-doc-explorer').innerText();
  check(/Query/.test(docs) && /Mutation/.test(docs), 'the docs list Query and Mutation');
  await shot(page, '3-docs');

  // 4. A new tab runs as the session: `me` answers the signed-in admin.
  await page.locator('[aria-label="New tab"]').click();
  const editor = page.locator('.graphiql-query-editor .monaco-editor').first();
  await editor.click();
  await page.keyboard.insertText('{ me { email role } }');
  await page.locator('.graphiql-execute-button').click();
  await page.waitForFunction(
    (email) => document.querySelector('.graphiql-response')?.textContent?.includes(email),
    values.email,
  );
  check((await answerText(page)).includes(values.email), 'a new tab runs `me` as the session');
  await shot(page, '4-me');

  // 5. Completion: typing in a field list offers the schema's fields.
  await editor.click();
  await page.keyboard.press('ControlOrMeta+A');
  await page.keyboard.press('Delete');
  await page.keyboard.insertText('{ cont');
  await page.keyboard.press('Control+Space');
  const suggestion = page.locator('.suggest-widget').getByText('contacts').first();
  await suggestion.waitFor({ timeout: 10_000 });
  check(await suggestion.isVisible(), 'completion offers `contacts`');
  await shot(page, '5-completion');
} catch (error) {
  problems.push(error instanceof Error ? error.message : String(error));
  for (const page of browser.contexts().flatMap((context) => context.pages())) {
    await shot(page, 'failed');
  }
} finally {
  await browser.close();
}
if (problems.length > 0) {
  console.error(`\n${problems.length} problem(s):\n  ${problems.join('\n  ')}`);
  process.exit(1);
}
console.log('\nthe interactive page works');
