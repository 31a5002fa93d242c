import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startTestService, useTestService, type TestService } from '../support/service.js';

const indexHtml = '<!doctype html><title>svc</title><div id="app"></div>';
const appJs = 'document.getElementById("app").textContent = "hello";';

let root: string;
let svc: TestService;

beforeAll(async () => {
  // The built frontend, and beside it a file it must never give away.
  root = await mkdtemp(path.join(tmpdir(), 'svc-web-'));
  const web = path.join(root, 'dist');
  await mkdir(path.join(web, 'assets'), { recursive: true });
  await writeFile(path.join(web, 'index.html'), indexHtml);
  await writeFile(path.join(web, 'assets', 'app.js'), appJs);
  await writeFile(path.join(root, 'secret.txt'), 'not for the web');
  svc = await startTestService({ env: { SVC_WEB_DIR: web }, listen: true });
});

afterAll(async () => {
  await svc.stop();
  await rm(root, { recursive: true, force: true });
});

/** GETs `rawPath` exactly as written, without the URL normalising fetch does. */
function getRaw(rawPath: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${svc.url}/`, { path: rawPath }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.once('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.once('error', reject);
    req.end();
  });
}

describe('with SVC_WEB_DIR', () => {
  test('the site root serves index.html', async () => {
    const response = await fetch(`${svc.url}/`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await response.text()).toBe(indexHtml);
  });

  test('a built asset is served with a JavaScript content type', async () => {
    const response = await fetch(`${svc.url}/assets/app.js`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/javascript/);
    expect(await response.text()).toBe(appJs);
  });

  test('a client route the frontend handles is answered with index.html', async () => {
    const response = await fetch(`${svc.url}/contacts/42`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await response.text()).toBe(indexHtml);
  });

  test('a missing asset answers 404 rather than index.html', async () => {
    const response = await fetch(`${svc.url}/assets/app.0ld.js`);
    expect(response.status).toBe(404);
    expect(await response.text()).not.toContain('<!doctype html>');
  });

  test.each(['/api/unknown', '/api', '/api/contacts/42'])(
    'the unknown API path %s still answers 404 JSON, never index.html',
    async (apiPath) => {
      const response = await fetch(`${svc.url}${apiPath}`);
      expect(response.status).toBe(404);
      expect(response.headers.get('content-type')).toMatch(/^application\/json/);
      expect(await response.json()).toEqual({ error: 'not found' });
    },
  );

  test.each([
    '/../secret.txt',
    '/%2e%2e/secret.txt',
    '/..%2fsecret.txt',
    '/assets/..%2f..%2fsecret.txt',
  ])(
    'a path climbing out of the directory (%s) never serves what lies beside it',
    async (rawPath) => {
      const { body } = await getRaw(rawPath);
      expect(body).not.toContain('not for the web');
    },
  );
});

describe('without SVC_WEB_DIR', () => {
  const service = useTestService();

  test('the site root answers 404 JSON: only the API is served', async () => {
    const apiOnly = service();
    const response = await apiOnly.request('/');
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({ error: 'not found' });
  });
});
