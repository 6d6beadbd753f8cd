import t from 'tap';
import { loadConfig } from '../../src/config.js';
import { generateKey } from '../../src/keys/api-key.js';
import { seedWorkspace, startApp } from '../support/app.js';

const randomKey = () => generateKey('secret', 'live');
const VICTIM = '203.0.113.66';
const ATTACKER = '198.51.100.5';
const LIMIT = { capacity: 30, refill_per_second: 0.001 };

t.test('TRUST_PROXY takes a hop count or the proxies addresses, never "trust every hop"', async (t) => {
  const trust = (value: string | undefined) => loadConfig({ TRUST_PROXY: value }).trustProxy;
  for (const value of ['true', 'TRUE', ' true ']) {
    t.throws(
      () => trust(value),
      { message: /^TRUST_PROXY=true is refused: it believes every X-Forwarded-For entry, which the client writes/ },
      `${JSON.stringify(value)} is refused with the reason`,
    );
  }
  t.equal(trust(undefined), false, 'unset: no proxy');
  t.equal(trust(''), false);
  t.equal(trust('false'), false);
  t.equal(trust('0'), false, 'no hop');
  t.equal(trust('1'), 1, 'one load balancer');
  t.equal(trust('2'), 2);
  t.same(trust('10.0.0.5, 10.0.1.0/24,loopback,2001:db8::/32'), [
    '10.0.0.5',
    '10.0.1.0/24',
    'loopback',
    '2001:db8::/32',
  ]);
  for (const value of ['proxy.example', '-1', '1.5', '10.0.0.0/99', '10.0.0.5,,10.0.0.6'])
    t.throws(
      () => trust(value),
      { message: /^TRUST_PROXY must be the number of proxies in front of the service or a comma-separated list/ },
      `${value} is refused`,
    );
});

/**
 * The test client plays a proxy on 127.0.0.1 that appends the address it received a request from to
 * X-Forwarded-For: whatever a client wrote there before stays to its left.
 */
function viaProxy(client: string, written?: string): Record<string, string> {
  return { 'x-forwarded-for': written ? `${written}, ${client}` : client };
}

for (const setting of ['1', '127.0.0.1']) {
  t.test(
    `TRUST_PROXY=${setting}: a forged X-Forwarded-For locks out no other address and passes no allow-list`,
    async (t) => {
      const api = await startApp(t, {
        config: { trustProxy: loadConfig({ TRUST_PROXY: setting }).trustProxy, authFailureLimit: LIMIT },
      });
      const ws = await seedWorkspace(api);
      const pinned = await ws.key({ ips: [VICTIM] });

      const storm: number[] = [];
      for (let i = 0; i < 40; i++) {
        const response = await api.request('/v1/leads', { key: randomKey(), headers: viaProxy(ATTACKER, VICTIM) });
        storm.push(response.status);
        await response.arrayBuffer();
      }
      t.same(
        storm,
        [...Array(30).fill(401), ...Array(10).fill(429)],
        "the failures count against the sender's address",
      );
      const victimFailure = await api.request('/v1/leads', { key: randomKey(), headers: viaProxy(VICTIM) });
      t.equal(victimFailure.status, 401, 'the address named in the forged entry still has its own failures');
      const attackerFailure = await api.request('/v1/leads', { key: randomKey(), headers: viaProxy(ATTACKER) });
      t.equal(attackerFailure.status, 429, "and the sender's own address is the one throttled");

      const forged = await api.request('/v1/leads', { key: pinned.value, headers: viaProxy(ATTACKER, VICTIM) });
      t.equal(forged.status, 403, 'a forged entry does not pass an IP allow-list');
      t.match(await forged.json(), { error: 'ip_not_allowed' });
      const many = await api.request('/v1/leads', {
        key: pinned.value,
        headers: viaProxy(ATTACKER, `${VICTIM}, 127.0.0.1, ${VICTIM}`),
      });
      t.equal(many.status, 403, 'nor do several forged entries, a trusted address among them');
      t.equal(
        (await api.request('/v1/leads', { key: pinned.value, headers: viaProxy(VICTIM) })).status,
        200,
        'the allowed address passes through the proxy',
      );
      t.equal(
        (await api.request('/v1/leads', { key: ws.live, headers: viaProxy(ATTACKER, VICTIM) })).status,
        200,
        'and a valid key from the throttled address is served',
      );
    },
  );
}
