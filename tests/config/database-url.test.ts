import { describe, expect, test } from '@jest/globals';
import { parseDatabaseUrl } from '../../src/config/database-url.js';

describe('parseDatabaseUrl', () => {
  test.each([
    'postgres://crm:secret@localhost:5432/crm',
    'postgresql://crm:secret@db.internal:5432/crm',
    'postgres://crm:p%40ss@localhost:5432/crm',
    'postgres://crm:a%2Fb%25c%3Fd%23e@localhost/crm',
    'postgres://crm%40corp:secret@localhost:5432/crm',
    'postgres://crm:secret@localhost:5432/crm?sslmode=disable',
    'postgres://crm:secret@localhost:5432/crm?sslmode=allow',
    'postgres://crm:secret@localhost:5432/crm?sslmode=prefer',
    'postgres://crm:secret@localhost:5432/crm?sslmode=require',
    'postgres://crm:secret@localhost:5432/crm?sslmode=verify-ca',
    'postgres://crm:secret@localhost:5432/crm?sslmode=verify-full',
    'postgres://crm:secret@localhost/crm',
    'postgres://crm@localhost:5432/crm',
    'postgres://crm:@localhost/crm',
    'postgres://crm:se:cret@localhost/crm',
    'postgres://crm:secret@10.0.0.5:5432/crm',
    'postgres://crm:secret@[::1]:5432/crm',
    'postgres://crm:secret@[::1]/crm',
    'postgres://crm:secret@crm_db:5432/crm',
    'postgres://crm:secret@localhost:5432/crm%2Ddev',
    'postgres://crm:secret@db1:5432,db2:5432/crm',
    'postgres://crm:secret@db1,10.0.0.6:5433,[::1]:5432/crm?target_session_attrs=read-write',
    'postgres://crm:secret@db1,db2/crm?target_session_attrs=primary',
    'postgres://crm:secret@db1,db2/crm?sslmode=require&target_session_attrs=read-write',
    'postgres://crm:secret@db1,db2/crm?target_session_attrs=read-write&sslmode=verify-full',
  ])('accepts %j unchanged', (text) => {
    expect(parseDatabaseUrl(text)).toEqual({ ok: true, value: text });
  });

  test.each([
    ['postgres://crm:p@ss@localhost:5432/crm', 'bare @'],
    ['postgres://crm@corp:secret@localhost/crm', 'bare @'],
    ['postgres://crm:pa/ss@localhost/crm', 'bare reserved sign'],
    ['postgres://crm:pa?ss@localhost/crm', 'bare reserved sign'],
    ['postgres://crm:pa#ss@localhost/crm', 'bare reserved sign'],
    ['postgres://crm:100%@localhost/crm', 'bad percent escape'],
    ['postgres://crm:%zzsecret@localhost/crm', 'bad percent escape'],
    ['postgres://crm:%ff@localhost/crm', 'bad percent escape'],
    ['mysql://crm:secret@localhost/crm', 'must start with postgres://'],
    ['localhost:5432/crm', 'must start with postgres://'],
    ['postgres://localhost:5432/crm', 'must name a user'],
    ['postgres://:secret@localhost/crm', 'must name a user'],
    ['postgres://crm:secret@/crm', 'must name a host'],
    ['postgres://crm:secret@localhost:0/crm', 'must name a host'],
    ['postgres://crm:secret@localhost:99999/crm', 'must name a host'],
    ['postgres://crm:secret@localhost:port/crm', 'must name a host'],
    ['postgres://crm:secret@::1:5432/crm', 'must name a host'],
    ['postgres://crm:secret@localhost:5432', 'must name a database'],
    ['postgres://crm:secret@localhost:5432/', 'must name a database'],
    ['postgres://crm:secret@localhost:5432/crm/extra', 'must name a database'],
    ['postgres://crm:secret@localhost/crm?sslmode=on', 'must use an sslmode of'],
    ['postgres://crm:secret@localhost/crm?sslmode=', 'must use an sslmode of'],
    ['postgres://crm:secret@localhost/crm?application_name=crm', 'only carry ?sslmode'],
    ['postgres://crm:secret@localhost/crm?sslmode=require&x=1', 'only carry ?sslmode'],
    ['postgres://crm:secret@localhost/crm?sslmode=require&sslmode=disable', 'once each'],
    ['postgres://crm:secret@localhost/crm?sslmode', 'only carry ?sslmode'],
    ['postgres://crm:secret@db1,db2/crm?target_session_attrs=any', 'a target_session_attrs of'],
    ['postgres://crm:secret@db1,db2/crm?target_session_attrs=standby', 'read-write, primary'],
    ['postgres://crm:secret@db1,,db2/crm', 'several hosts separated by commas'],
    ['postgres://crm:secret@db1:5432,/crm', 'must name a host'],
    ['postgres://crm:secret@db1,db2:0/crm', 'must name a host'],
    ['postgres://crm:secret@localhost/crm#frag', 'fragment'],
  ])('refuses %j (%s)', (text, reason) => {
    const result = parseDatabaseUrl(text);
    expect(result.ok).toBe(false);
    expect(JSON.stringify(result)).toContain(reason);
  });

  test('never repeats the password in a refusal', () => {
    for (const text of [
      'postgres://crm:hunter2@@localhost/crm',
      'postgres://crm:hun/ter2@localhost/crm',
      'postgres://crm:hunter2%@localhost/crm',
      'postgres://crm:hunter2@localhost/crm?sslmode=nope',
      'postgres://crm:hunter2@bad host/crm',
    ]) {
      expect(JSON.stringify(parseDatabaseUrl(text))).not.toContain('hunter2');
    }
  });
});
