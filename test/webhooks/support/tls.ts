import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface TestPki {
  /** The test certificate authority's certificate (PEM): what the delivery client is told to trust. */
  ca: string;
  caFile: string;
  /** The receiver's key and certificate, signed by the CA for localhost, 127.0.0.1, ::1 and a few test names. */
  key: string;
  cert: string;
  dir: string;
  cleanup(): void;
}

export const TEST_HOSTNAMES = ['localhost', 'hooks.test', 'rebind.test', 'mixed.test'];

/** Makes a throwaway certificate authority and a server certificate with the openssl CLI. */
export function makeTestPki(): TestPki {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'vcrm-webhook-pki-'));
  const run = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  run(
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
    '-days',
    '2',
    '-subj',
    '/CN=visa-crm webhook test CA',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  );
  run(
    'req',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    'server.key',
    '-out',
    'server.csr',
    '-subj',
    '/CN=localhost',
  );
  const san = [...TEST_HOSTNAMES.map((h) => `DNS:${h}`), 'IP:127.0.0.1', 'IP:::1'].join(',');
  writeFileSync(
    path.join(dir, 'ext.cnf'),
    `subjectAltName=${san}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n`,
  );
  run(
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'server.crt',
    '-days',
    '2',
    '-extfile',
    'ext.cnf',
  );
  const read = (f: string) => readFileSync(path.join(dir, f), 'utf8');
  return {
    ca: read('ca.crt'),
    caFile: path.join(dir, 'ca.crt'),
    key: read('server.key'),
    cert: read('server.crt'),
    dir,
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}
