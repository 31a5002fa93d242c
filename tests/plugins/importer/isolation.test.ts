// Issue 26 items 1 and 5 against a real `svc serve`: a hostile spreadsheet costs a worker
// process, never the serving one (which kept dying of a 103 KB file), and an upload too
// large for any upload field is refused on its Content-Length, before its body arrives.
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { serveProcesses, type ServedProcess } from '../../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { bearer, createUser, createWorkspace, tokenFor } from '../../support/factories.js';
import { workbookOfSharedStrings } from '../../support/zip.js';

let db: TestDatabase;
let served: ServedProcess;
const serveProcess = serveProcesses();
let uploader: Record<string, string>;
let bystander: Record<string, string>;

async function adminOfNewWorkspace(): Promise<Record<string, string>> {
  const workspace = await createWorkspace(db.database.db);
  const admin = await createUser(db.database.db, workspace, { role: 'admin' });
  return bearer(await tokenFor(db.database.db, admin));
}

beforeAll(async () => {
  db = await createTestDatabase();
  // Workers held to 128 MiB (SVC_WORKER_MEMORY_MAX caps every worker's own limit): a
  // 60 MB string then exceeds a worker's memory every time, whatever the collector does.
  served = await serveProcess({
    SVC_DATABASE_URL: db.url,
    SVC_WORKER_MEMORY_MAX: String(128 * 1024 * 1024),
  });
  uploader = await adminOfNewWorkspace();
  bystander = await adminOfNewWorkspace();
}, 60_000);

afterAll(() => db.drop());

const UPLOAD = 'mutation ($file: Upload!) { importUpload(file: $file) { id rowCount } }';

interface Answer {
  data?: unknown;
  errors?: { message: string; extensions: { reason?: string } }[];
}

async function upload(bytes: Buffer, name: string): Promise<Answer> {
  const form = new FormData();
  form.append('operations', JSON.stringify({ query: UPLOAD, variables: { file: null } }));
  form.append('map', JSON.stringify({ 0: ['variables.file'] }));
  form.append('0', new Blob([bytes as BlobPart]), name);
  const response = await fetch(`${served.url}/api/graphql`, {
    method: 'POST',
    headers: uploader,
    body: form,
  });
  return (await response.json()) as Answer;
}

async function me(headers: Record<string, string>): Promise<Answer> {
  const response = await fetch(`${served.url}/api/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ query: '{ me { id } }' }),
  });
  return (await response.json()) as Answer;
}

/** Uploads `file`, asking the bystander's `me` until the upload answers; both answers. */
async function uploadBesideAnotherWorkspace(file: Buffer, name: string) {
  let answered = false;
  const pending = upload(file, name).finally(() => (answered = true));
  const meanwhile: Answer[] = [await me(bystander)];
  while (!answered) meanwhile.push(await me(bystander));
  return { answer: await pending, meanwhile };
}

describe('a hostile spreadsheet against a serving process', () => {
  test('a 103 KB .xlsx holding one 100 MB string is file_unreadable; the process lives', async () => {
    const bomb = workbookOfSharedStrings(['name', Buffer.alloc(100_000_000, 'A')]);
    expect(bomb.length).toBeLessThan(110_000);
    const { answer, meanwhile } = await uploadBesideAnotherWorkspace(bomb, 'bomb.xlsx');
    expect(answer.errors?.[0]?.extensions.reason).toBe('file_unreadable');
    for (const other of meanwhile) expect(other).toEqual({ data: { me: expect.anything() } });
    expect(served.child.exitCode).toBeNull();
    expect(await me(uploader)).toEqual({ data: { me: expect.anything() } });
  }, 60_000);

  test('one that passes the inflated-size check and exhausts the parser’s memory is refused the same', async () => {
    // 60 MB inflated: under the 64 MiB check, past what a 128 MiB worker can parse.
    const bomb = workbookOfSharedStrings(['name', Buffer.alloc(60_000_000, 'A')]);
    const { answer, meanwhile } = await uploadBesideAnotherWorkspace(bomb, 'bomb.xlsx');
    expect(answer.errors?.[0]).toMatchObject({
      message: 'the file is too large or complex to read',
      extensions: { reason: 'file_unreadable' },
    });
    for (const other of meanwhile) expect(other).toEqual({ data: { me: expect.anything() } });
    expect(served.child.exitCode).toBeNull();
  }, 60_000);
});

describe('an upload too large for any upload field', () => {
  test('is refused on its declared Content-Length, before its body is sent', async () => {
    const boundary = 'svc-test-boundary';
    const operations = JSON.stringify({ query: UPLOAD, variables: { file: null } });
    const head =
      `--${boundary}\r\nContent-Disposition: form-data; name="operations"\r\n\r\n${operations}\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="map"\r\n\r\n{"0":["variables.file"]}\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="0"; filename="big.csv"\r\n\r\n`;
    // A 5.5 MiB file: under SVC_GRAPH_UPLOAD_MAX_BYTES (6 MiB), over the importer's 5 MiB.
    const length = head.length + 5.5 * 1024 * 1024 + `\r\n--${boundary}--\r\n`.length;
    const socket = connect(Number(new URL(served.url).port), '127.0.0.1');
    const answer = new Promise<string>((resolve) => {
      let text = '';
      socket.on('data', (chunk: Buffer) => (text += chunk.toString()));
      socket.on('close', () => resolve(text));
    });
    socket.write(
      `POST /api/graphql HTTP/1.1\r\nHost: localhost\r\nAuthorization: ${uploader.authorization}\r\n` +
        `Content-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: ${length}\r\n\r\n` +
        head,
    );
    // Only the head of the body is ever sent: the answer comes without the rest.
    const text = await answer;
    expect(text).toMatch(/^HTTP\/1\.1 413 /);
    const body = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) as {
      errors: { extensions: { reason: string; meta: unknown } }[];
    };
    expect(body.errors[0]?.extensions).toMatchObject({
      reason: 'file_too_large',
      meta: { maxBytes: 5 * 1024 * 1024 },
    });
  });
});
