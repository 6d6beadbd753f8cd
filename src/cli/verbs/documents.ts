import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Command } from 'commander';
import { handleDocumentCommand, receiveUpload, recordUpload } from '../../commands/documents/document-commands.js';
import { documentTypesOf, type Document, type DocumentSubject } from '../../domain/documents/index.js';
import type { AppServices } from '../../bootstrap.js';
import { findDocument, listDocuments } from '../../projections/documents.js';
import type { Workspace } from '../../workspaces/workspace.js';
import { staffOptions, withStaff, type StaffOptions } from '../staff.js';
import { requireWorkspace, withServices } from '../context.js';
import { CliError, notFoundIn, output, table } from '../output.js';

function describe(document: Document): string {
  const status =
    document.status === 'pending_scan'
      ? 'pending_scan: waiting for the virus scanner; a running service scans it when clamd answers'
      : document.status === 'rejected'
        ? `rejected at ${document.rejected_at}: ${document.rejection_reason}`
        : document.status === 'infected'
          ? `infected (${document.scan_signature}): refused and deleted`
          : document.status === 'scan_failed'
            ? `scan_failed at ${document.scanned_at}: ${document.scan_error}; set aside, never accepted`
            : `available (scanned ${document.scanned_at})`;
  return [
    `${document.filename}  (${document.id})`,
    `${document.type} for ${document.lead_id ? `lead ${document.lead_id}` : `application ${document.application_id}`}`,
    `${document.content_type}, ${document.size} bytes, sha256 ${document.checksum_sha256}`,
    status,
  ].join('\n');
}

function subjectOf(o: { lead?: string; application?: string }): DocumentSubject {
  if (Boolean(o.lead) === Boolean(o.application)) throw new CliError('Name exactly one of --lead and --application');
  return o.lead ? { lead_id: o.lead, application_id: null } : { lead_id: null, application_id: o.application! };
}

/** `visa-crm document …`: the workspace UI's document operations. */
export function registerDocumentVerbs(program: Command, json: () => boolean): void {
  const document = program
    .command('document')
    .description('documents for leads and applications, scanned by ClamAV (document.uploaded, document.rejected)');
  const print = (view: Document) => output(json(), view, () => describe(view));

  staffOptions(
    document
      .command('upload <workspace> <file>')
      .description('upload a file for a lead or an application; it is scanned by clamd (CLAMD_ADDRESS) first')
      .option('--lead <leadId>', 'the lead the document is for')
      .option('--application <applicationId>', 'the application the document is for')
      .requiredOption('--type <type>', 'a document type of the workspace (passport, transcript, …)')
      .option('--name <filename>', "the name to keep (the file's own name by default)")
      .option('--content-type <type>', "the content type it must be (the file's first bytes decide otherwise)"),
  ).action(
    async (
      ws: string,
      file: string,
      o: StaffOptions & { lead?: string; application?: string; type: string; name?: string; contentType?: string },
    ) => {
      const subject = subjectOf(o);
      const stats = await stat(file).catch(() => null);
      if (!stats?.isFile()) throw new CliError(`No file at ${file}`);
      const view = await withStaff(ws, o, async (s, workspace, context) => {
        const upload = await receiveUpload(s.documents.storage, context.now, createReadStream(file));
        return recordUpload(s.store, s.documents, context, documentTypesOf(workspace.settings), upload, {
          subject,
          document_type: o.type,
          filename: o.name ?? path.basename(file),
          declared_content_type: o.contentType ?? null,
        });
      });
      print(view);
    },
  );

  document
    .command('list <workspace>')
    .option('--lead <leadId>', "only this lead's documents")
    .option('--application <applicationId>', "only this application's documents")
    .option('--sandbox', 'read sandbox (test-mode) data')
    .description('list documents, oldest first')
    .action(async (ws: string, o: { lead?: string; application?: string; sandbox?: boolean }) => {
      const documents = await withServices(async (s) => {
        const workspace = await requireWorkspace(s, ws);
        return listDocuments(s.pool, workspace.id, o.sandbox ?? false, {
          lead_id: o.lead,
          application_id: o.application,
        });
      });
      output(json(), { data: documents }, () =>
        table(
          documents.map((d) => ({ ...d, for: d.lead_id ? `lead ${d.lead_id}` : `application ${d.application_id}` })),
          ['id', 'type', 'filename', 'size', 'status', 'created_at', 'for'],
        ),
      );
    });

  const find = (s: AppServices, workspace: Workspace, id: string, sandbox: boolean | undefined) =>
    findDocument(s.pool, workspace.id, sandbox ?? false, id).then((found) => {
      if (!found) throw notFoundIn('document', id, workspace, sandbox);
      return found;
    });

  document
    .command('show <workspace> <documentId>')
    .option('--sandbox', 'read sandbox (test-mode) data')
    .description('show a document')
    .action(async (ws: string, id: string, o: { sandbox?: boolean }) => {
      print(await withServices(async (s) => find(s, await requireWorkspace(s, ws), id, o.sandbox)));
    });

  document
    .command('download <workspace> <documentId>')
    .requiredOption('--out <file>', 'where to write the file (never overwritten)')
    .option('--sandbox', 'read sandbox (test-mode) data')
    .description("write a document's file and check it against its SHA-256")
    .action(async (ws: string, id: string, o: { out: string; sandbox?: boolean }) => {
      const result = await withServices(async (s) => {
        const found = await find(s, await requireWorkspace(s, ws), id, o.sandbox);
        if (found.status !== 'available' && found.status !== 'rejected')
          throw new CliError(`Document ${id} is ${found.status}: there is no file to download`);
        const file = await s.documents.storage.open(found.id);
        if (!file) throw new CliError(`The stored file of document ${id} is missing`);
        const hash = createHash('sha256');
        const hashing = new Transform({
          transform(chunk: Buffer, _encoding, done) {
            hash.update(chunk);
            done(null, chunk);
          },
        });
        await pipeline(file.stream, hashing, createWriteStream(o.out, { flags: 'wx' }));
        const checksum = hash.digest('hex');
        if (checksum !== found.checksum_sha256)
          throw new CliError(`The file written has SHA-256 ${checksum}, not the document's ${found.checksum_sha256}`);
        return { file: o.out, size: file.size, checksum_sha256: checksum };
      });
      output(json(), result, () => `wrote ${result.file} (${result.size} bytes, sha256 ${result.checksum_sha256})`);
    });

  staffOptions(
    document
      .command('reject <workspace> <documentId>')
      .description('reject an available document with a reason (document.rejected)')
      .requiredOption('--reason <reason>', 'why, for the applicant and the record'),
  ).action(async (ws: string, id: string, o: StaffOptions & { reason: string }) => {
    print(
      await withStaff(
        ws,
        o,
        async (s, _workspace, context) =>
          (await handleDocumentCommand(s.store, context, id, (now) => ({ type: 'reject', reason: o.reason, now })))
            .state,
      ),
    );
  });
}
