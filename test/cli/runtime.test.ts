import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';

// The project runs on the Node 24 LTS that `npm ci` puts in node_modules; the suites run on it (process.execPath),
// and bin/visa-crm.js started by the machine's older Node hands over to it.

const ROOT = path.resolve(import.meta.dirname, '../..');
const major = (version: string) => Number(version.replace(/^v/, '').split('.')[0]);

t.test('the suites run on the Node that engines names', async (t) => {
  const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };
  const [, low, high] = /^>=(\d+\.\d+\.\d+) <(\d+)$/.exec(pkg.engines.node) ?? [];
  t.ok(low && high, `engines.node is a range from a version to a major (${pkg.engines.node})`);
  const [a, b, c] = process.versions.node.split('.').map(Number);
  const [x, y, z] = low!.split('.').map(Number);
  t.ok(a! > x! || (a === x && (b! > y! || (b === y && c! >= z!))), `${process.version} is at least ${low}`);
  t.ok(a! < Number(high), `${process.version} is below ${high}`);
  // Both resolved: node_modules may be a link (a worktree sharing another checkout's), and execPath is resolved.
  t.equal(
    realpathSync(process.execPath),
    realpathSync(path.join(ROOT, 'node_modules/node/bin/node')),
    "the project's own Node",
  );
});

const older = ['/usr/bin/node', '/usr/local/bin/node'].find(
  (file) => existsSync(file) && major(spawnSync(file, ['--version']).stdout.toString()) < 24,
);

t.test(
  'bin/visa-crm.js started by an older Node runs the CLI on the project’s',
  { skip: !older && 'no older Node here' },
  async (t) => {
    // Every Node process started with these options names its version first, the handed-over one included.
    const result = spawnSync(older!, [path.join(ROOT, 'bin/visa-crm.js'), '--help'], {
      env: { ...process.env, NODE_OPTIONS: '--import=data:text/javascript,console.error(process.version)' },
    });
    const versions = result.stderr.toString().match(/^v\d+\.\d+\.\d+$/gm) ?? [];
    t.equal(result.status, 0, 'exits 0');
    t.equal(versions.length, 2, `two processes: the older Node's, then the project's (${versions.join(', ')})`);
    t.ok(major(versions[0]!) < 24 && major(versions[1]!) === 24, 'handed over from the older to 24');
    t.match(result.stdout.toString(), /^Usage: visa-crm/, 'the CLI ran');
  },
);
