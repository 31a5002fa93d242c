import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from '@jest/globals';
import { loadConfig, loadEnvFile, loadProcessConfig } from '../../src/config.js';

const root = mkdtempSync(join(tmpdir(), 'svc-env-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let count = 0;
function dirWithEnvFile(content: string): string {
  const dir = join(root, String(count++));
  mkdirSync(dir);
  writeFileSync(join(dir, '.env'), content);
  return dir;
}

describe('loadEnvFile', () => {
  test('reads the variables of a .env file in the working directory', () => {
    const dir = dirWithEnvFile('SVC_ADDR=0.0.0.0:9000\n# a comment\nSVC_FORMAT_LOCALE="en-GB"\n');
    expect(loadEnvFile(dir, {})).toEqual({
      SVC_ADDR: '0.0.0.0:9000',
      SVC_FORMAT_LOCALE: 'en-GB',
    });
  });

  test('lets real environment variables win over the file', () => {
    const dir = dirWithEnvFile('SVC_ADDR=0.0.0.0:9000\nSVC_GRAPH_PAGE_CAP=100\n');
    const env = loadEnvFile(dir, { SVC_ADDR: 'localhost:7000', PATH: '/bin' });
    expect(env).toEqual({ SVC_ADDR: 'localhost:7000', SVC_GRAPH_PAGE_CAP: '100', PATH: '/bin' });
    expect(loadConfig(env).config.server.addr).toEqual({ host: 'localhost', port: 7000 });
  });

  test('lets a real variable set to an empty string blank out the file value', () => {
    const dir = dirWithEnvFile('SVC_GRAPH_PAGE_CAP=100\n');
    const env = loadEnvFile(dir, { SVC_GRAPH_PAGE_CAP: '' });
    expect(env.SVC_GRAPH_PAGE_CAP).toBe('');
    expect(loadConfig(env).config.graph.pageCap).toBe(200);
  });

  test('ignores a real variable whose value is undefined', () => {
    const dir = dirWithEnvFile('SVC_GRAPH_PAGE_CAP=100\n');
    expect(loadEnvFile(dir, { SVC_GRAPH_PAGE_CAP: undefined }).SVC_GRAPH_PAGE_CAP).toBe('100');
  });

  test('returns a copy of the environment when there is no .env file', () => {
    const env = { SVC_ADDR: 'localhost:7000' };
    const merged = loadEnvFile(root, env);
    expect(merged).toEqual(env);
    expect(merged).not.toBe(env);
  });

  test('throws, naming the path, when .env cannot be read', () => {
    const dir = join(root, 'dir-env');
    mkdirSync(join(dir, '.env'), { recursive: true });
    expect(() => loadEnvFile(dir, {})).toThrow(join(dir, '.env'));
  });

  test('keeps a quoted value with a # exactly as written in the file', () => {
    const dir = dirWithEnvFile(
      "SVC_CHAT_APP_SECRET='abc#def'\nSVC_DATABASE_URL=postgres://crm:p%40ss@db:5432/crm\n",
    );
    expect(loadEnvFile(dir, {})).toEqual({
      SVC_CHAT_APP_SECRET: 'abc#def',
      SVC_DATABASE_URL: 'postgres://crm:p%40ss@db:5432/crm',
    });
  });
});

describe('loadProcessConfig', () => {
  test('reads the real environment over the .env file of the given directory', () => {
    const dir = dirWithEnvFile('SVC_GRAPH_PAGE_CAP=100\nSVC_GRAPH_PAGE_SIZE=40\n');
    process.env.SVC_GRAPH_PAGE_SIZE = '30';
    try {
      const { config, problems } = loadProcessConfig(dir);
      expect(problems).toEqual([]);
      expect(config.graph).toMatchObject({ pageCap: 100, pageSize: 30 });
    } finally {
      delete process.env.SVC_GRAPH_PAGE_SIZE;
    }
  });
});
