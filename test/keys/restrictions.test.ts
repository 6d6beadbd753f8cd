import fc from 'fast-check';
import ipaddr from 'ipaddr.js';
import t from 'tap';
import { ipAllowed } from '../../src/http/auth.js';
import { createKey, KeyRefusal } from '../../src/keys/repository.js';
import { checkedIpAllowlist, checkedOrigins, ipEntry, originEntry } from '../../src/keys/restrictions.js';
import { consoleFixture } from '../console/support.js';
import { memberOf } from '../identity/support.js';
import { freshDatabase } from '../support/db.js';
import { checkProperty } from '../support/properties.js';

t.test('IP allow-list entries: addresses and ranges as the request check reads them, nothing else', async (t) => {
  t.equal(ipEntry('10.0.0.300'), undefined, 'an octet over 255');
  t.equal(ipEntry('nonsense'), undefined);
  t.equal(ipEntry('10.1'), undefined, 'a short form no one means');
  t.equal(ipEntry('10.0.0.0/33'), undefined, 'a prefix longer than the address');
  t.equal(ipEntry('10.0.0.0/8/1'), undefined);
  t.equal(ipEntry('2001:DB8::/32'), '2001:db8::/32', 'IPv6 ranges, normalised');
  t.equal(ipEntry(' 203.0.113.7 '), '203.0.113.7');
  t.throws(() => checkedIpAllowlist(['10.0.0.300', 'nonsense', '10.0.0.1']), {
    name: 'KeyRefusal',
    about: 'ips',
    message: /"10\.0\.0\.300", "nonsense"/,
  });

  const v4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((o) => o.join('.'));
  await checkProperty(
    t,
    'every accepted IPv4 entry lets in the addresses it names, read by the request check',
    fc.property(v4, fc.option(fc.integer({ min: 0, max: 32 }), { nil: undefined }), (address, bits) => {
      const entry = ipEntry(bits === undefined ? address : `${address}/${bits}`);
      if (entry === undefined) return false;
      return ipAllowed(address, [entry]) && ipAllowed(`::ffff:${address}`, [entry]);
    }),
    300,
  );
  await checkProperty(
    t,
    'any text: accepted only when ipaddr reads it as an address or a range',
    fc.property(fc.string({ maxLength: 24 }), (text) => {
      const entry = ipEntry(text);
      if (entry === undefined) return true;
      return entry.includes('/') ? ipaddr.isValidCIDR(entry) : ipaddr.isValid(entry);
    }),
    500,
  );
});

t.test('origins: the site alone, http or https', async (t) => {
  t.equal(originEntry('https://www.example.com'), 'https://www.example.com');
  t.equal(originEntry('https://www.example.com/'), 'https://www.example.com');
  t.equal(originEntry('HTTPS://Example.com:443'), 'https://example.com');
  t.equal(originEntry('https://www.example.com/form?x=1'), 'https://www.example.com', 'a page names its site');
  for (const wrong of ['nonsense', 'ftp://example.com', 'https://u:p@example.com', 'www.example.com'])
    t.equal(originEntry(wrong), undefined, `${wrong} refused`);
  t.throws(() => checkedOrigins(['https://ok.example', 'not a url']), { about: 'origins', message: /"not a url"/ });
});

t.test('createKey, the door every key goes through, refuses an unreadable allow-list', async (t) => {
  const { pool } = await freshDatabase(t);
  const tenantId = '00000000-0000-4000-8000-000000000001';
  await t.rejects(
    createKey(pool, {
      tenantId,
      name: 'bad',
      kind: 'secret',
      mode: 'test',
      scopes: ['leads:read'],
      ipAllowlist: ['10.0.0.300', 'nonsense'],
    }),
    KeyRefusal,
  );
  t.equal((await pool.query('SELECT count(*)::int AS n FROM api_keys')).rows[0].n, 0, 'nothing was stored');
});

t.test('the console: refused by its field; the list shows the IPs and origins of each key', async (t) => {
  const f = await consoleFixture(t);
  const c = f.client();
  await c.signIn(memberOf('admin'));
  const keys = `/console/w/${f.ws.workspace.slug}/keys`;
  const refused = await c.post(keys, { name: 'Office', type: 'secret', mode: 'test', ips: '10.0.0.300, nonsense' });
  t.equal(refused.status, 400);
  t.match(refused.text, /id="f-ips-error">Not an IP address or range: &quot;10.0.0.300&quot;, &quot;nonsense&quot;/);
  t.equal(
    (await c.post(keys, { name: 'Office', type: 'secret', mode: 'test', ips: '203.0.113.0/24 2001:DB8::1' })).status,
    303,
  );
  const form = { name: 'Site', type: 'public', mode: 'test', origins: 'https://www.example.org/' };
  t.equal((await c.post(keys, form)).status, 303);
  const list = (await c.get(keys)).text;
  t.match(list, /<td>203\.0\.113\.0\/24, 2001:db8::1<\/td>/, 'the IPs, normalised');
  t.match(list, /<td>https:\/\/www\.example\.org<\/td>/, 'the origins');
});
