import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import type { Document } from '../../src/domain/documents/index.js';
import { runCli } from '../support/cli.js';
import { clamdSkipReason, pdfFile, TEST_MALWARE_MARKER } from '../support/clamd.js';
import { documentFixture } from './support.js';

const AS = ['--as', 'meera@northstar.example'];

// Each CLI run starts a process of its own; the refusals beyond these are tested on the admin interface
// and in the domain specs, which the CLI calls the same way.
t.test(
  'the CLI uploads, lists, downloads and rejects documents and prints their history',
  { skip: clamdSkipReason() },
  async (t) => {
    t.setTimeout(600_000);
    const f = await documentFixture(t);
    const env = { RUN_WORKERS: 'false', CLAMD_ADDRESS: f.clamd.address, DATA_DIR: f.dataDir };
    const cli = (...args: string[]) => runCli(f.app.services.config.databaseUrl!, args, env);
    const json = async <T>(...args: string[]): Promise<T> => {
      const result = await cli('--json', ...args);
      t.equal(result.code, 0, `${args.slice(0, 2).join(' ')}: ${result.stderr}`);
      return JSON.parse(result.stdout) as T;
    };
    const slug = f.ws.workspace.slug;
    const application = await f.convert(await f.lead());
    const source = path.join(f.dataDir, 'offer letter.pdf');
    const bytes = pdfFile('offer letter');
    writeFileSync(source, bytes);

    const uploaded = await json<Document>(
      'document',
      'upload',
      slug,
      source,
      '--application',
      application.id,
      '--type',
      'offer_letter',
      ...AS,
    );
    t.match(uploaded, {
      application_id: application.id,
      filename: 'offer letter.pdf',
      status: 'available',
      checksum_sha256: createHash('sha256').update(bytes).digest('hex'),
    });

    const infectedFile = path.join(f.dataDir, 'bad.pdf');
    writeFileSync(infectedFile, pdfFile(TEST_MALWARE_MARKER));
    const infected = await cli(
      'document',
      'upload',
      slug,
      infectedFile,
      '--application',
      application.id,
      '--type',
      'passport',
      ...AS,
    );
    t.not(infected.code, 0, 'an infected file is refused');
    t.match(infected.stderr, /VisaCrm\.Test\.Marker/);

    const listed = await json<{ data: Document[] }>('document', 'list', slug, '--application', application.id);
    t.same(
      listed.data.map((d) => d.status),
      ['available', 'infected'],
    );

    const out = path.join(f.dataDir, 'downloaded.pdf');
    const download = await json<{ checksum_sha256: string }>('document', 'download', slug, uploaded.id, '--out', out);
    t.equal(download.checksum_sha256, uploaded.checksum_sha256);
    t.same(readFileSync(out), bytes, 'the same bytes');

    const rejected = await json<Document>('document', 'reject', slug, uploaded.id, '--reason', 'Not signed', ...AS);
    t.match(rejected, { status: 'rejected', rejection_reason: 'Not signed' });

    const history = await cli('history', 'document', uploaded.id);
    t.equal(history.code, 0, history.stderr);
    t.match(history.stdout, /document\.received/);
    t.match(history.stdout, /document\.uploaded/);
    t.match(history.stdout, /document\.rejected[^\n]*\n\s+Rejected: Not signed/);

    const missing = await cli(
      'document',
      'upload',
      slug,
      '/nonexistent.pdf',
      '--lead',
      await f.lead(),
      '--type',
      'passport',
      ...AS,
    );
    t.not(missing.code, 0);
    t.match(missing.stderr, /No file at \/nonexistent\.pdf/);
  },
);
