import multipart, { type MultipartFile } from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { AppServices } from '../../bootstrap.js';
import { acceptedSubmission } from '../../commands/leads/submit-lead.js';
import { isUnreadableMultipart } from '../../documents/unreadable-multipart.js';
import { Refusal } from '../../domain/refusal.js';
import type { TypedApp } from '../../http/typed-app.js';
import { leadCreateProblems } from '../../http/lead-create-problems.js';
import { FileRefusal } from '../../intake/import/file-refusal.js';
import {
  IMPORT_FIELD_KEYS,
  missingColumns,
  type ColumnMapping,
  type ImportField,
} from '../../intake/import/mapping.js';
import {
  checkImport,
  discardImport,
  findImport,
  importSummary,
  IMPORT_LIMITS,
  previewRows,
  stageImport,
  type LeadImport,
  type RowFilter,
  type RowVerdict,
} from '../../intake/import/store.js';
import { newId } from '../../shared/ids.js';
import type { Workspace } from '../../workspaces/workspace.js';
import { ConsoleRefusal, sendPage, type MemberView } from '../context.js';
import { actorOf } from '../forms.js';
import { viewOf } from '../routes.js';
import { Checkbox, Choice, Csrf, formBody, IdParams, SlugParams } from '../schemas.js';
import { partsAsText } from '../validation.js';
import {
  bytesText,
  importBase,
  importPage,
  limitsText,
  REFRESH_SCRIPT,
  uploadPage,
  type PreviewPart,
} from './lead-import-views.js';
import { importProgress, recentImports, startImport } from './lead-import-jobs.js';

const PREVIEW_ROWS = 50;
const UNREADABLE_FORM = 'The form could not be read; nothing was done.';

/** What became of the file of an upload: staged, or refused (with its status). */
type UploadOutcome = { lead: LeadImport } | { refusal: string; status: number };

declare module 'fastify' {
  interface FastifyRequest {
    /** The CSV file of an import upload, staged as it streamed in (or why not). */
    leadImportUpload: UploadOutcome | null;
  }
}

/**
 * The API's verdict on a row's LeadCreate body: the route's schema (src/http/lead-create-problems.ts), then the
 * capture command's checks before any lookup (`acceptedSubmission`), as a secret key's POST /v1/leads would get.
 */
export function rowVerdict(workspace: Workspace, now: Date) {
  return (body: Record<string, unknown>): RowVerdict => {
    const schemaProblems = leadCreateProblems(body);
    try {
      const { submission } = acceptedSubmission({ body, schemaProblems, workspace, keyKind: 'secret' }, now);
      return { problems: {}, phone: submission.phone, email: submission.email };
    } catch (error) {
      if (!(error instanceof Refusal)) throw error;
      return { problems: error.fields ?? { row: error.message }, phone: null, email: null };
    }
  };
}

/** Streams the upload's file into staging; a refusal (the file's, or its size) is kept for the handler to answer. */
async function receiveFile(
  services: AppServices,
  request: FastifyRequest,
  view: MemberView,
  part: MultipartFile,
): Promise<UploadOutcome> {
  const id = newId();
  const limits = limitsOf(services);
  try {
    const lead = await stageImport(
      services.pool,
      {
        id,
        tenantId: view.workspace.id,
        actor: actorOf(view),
        filename: part.filename.slice(0, 200),
        now: services.now(),
        maxRows: limits.maxRows,
      },
      part.file,
    );
    if (!part.file.truncated) return { lead };
    await discardImport(services.pool, view.workspace.id, id);
  } catch (error) {
    if (!(error instanceof FileRefusal)) throw error;
    if (!part.file.truncated) return { refusal: error.message, status: error.code === 'too_many_rows' ? 413 : 400 };
  }
  request.log.info({ import: id }, 'an import upload was larger than the limit');
  return {
    refusal: `The file is larger than ${bytesText(limits.maxBytes)}: an import takes ${limitsText(limits)}. Split the file and import each part.`,
    status: 413,
  };
}

const limitsOf = (services: AppServices) => services.config.csvImportLimits ?? IMPORT_LIMITS;

/** The recent uploads of the workspace, for the upload page. */
async function uploadView(services: AppServices, view: MemberView, error?: string) {
  const recent = await recentImports(services.pool, view.workspace.id);
  return uploadPage(view, { error, recent, limits: limitsOf(services) });
}

async function leadImportOf(services: AppServices, view: MemberView, id: string): Promise<LeadImport> {
  const lead = await findImport(services.pool, view.workspace.id, id);
  if (!lead)
    throw new ConsoleRefusal(
      404,
      'There is no such upload in this workspace (an upload never imported is kept one day).',
    );
  return lead;
}

const SHOW = ['all', 'problems', 'duplicates'] as const;
const ImportQuery = Type.Object({
  show: Type.Optional(Choice(SHOW)),
  after: Type.Optional(Type.Integer({ minimum: 0, maximum: 10_000_000, errorMessage: 'This is not a row number.' })),
  done: Type.Optional(Choice(['checked', 'started'])),
});
const MESSAGES: Record<string, string> = {
  checked: 'Every row was checked with this mapping: see the preview below.',
  started: 'The import was started.',
};

/** The page of an upload: the mapping and, once the rows were checked, a page of the preview. */
async function uploadedPage(
  services: AppServices,
  view: MemberView,
  lead: LeadImport,
  o: { show?: RowFilter; after?: number; message?: string; mapping?: ColumnMapping; errors?: Record<string, string> },
): Promise<string> {
  let preview: PreviewPart | undefined;
  if (lead.checkedAt) {
    const filter = o.show ?? 'all';
    const rows = await previewRows(services.pool, lead, { filter, after: o.after ?? 0, limit: PREVIEW_ROWS + 1 });
    const more = rows.length > PREVIEW_ROWS;
    const shown = rows.slice(0, PREVIEW_ROWS);
    preview = {
      summary: await importSummary(services.pool, lead),
      rows: shown,
      filter,
      next: more ? shown.at(-1)!.rowNo : null,
    };
  }
  return importPage(view, lead, { mapping: o.mapping, errors: o.errors, message: o.message, preview });
}

/** The mapping form's columns (`col_<n>`), each one of the fields or left out; unknown values refused by their select. */
function mappingOf(
  lead: LeadImport,
  form: Record<string, unknown>,
): { mapping: ColumnMapping; errors: Record<string, string> } {
  const errors: Record<string, string> = {};
  const mapping: ColumnMapping = lead.headers.map((_, column) => {
    const value = form[`col_${column}`];
    if (value === undefined || value === '') return '';
    if (typeof value === 'string' && (IMPORT_FIELD_KEYS as readonly string[]).includes(value))
      return value as ImportField;
    errors[`col_${column}`] = 'Choose one of the fields listed, or Leave out.';
    return '';
  });
  const taken = new Map<string, number>();
  mapping.forEach((field, column) => {
    if (!field || field === 'phone' || field === 'email' || field === 'message') return;
    if (taken.has(field))
      errors[`col_${column}`] =
        `Column ${taken.get(field)! + 1} gives this field already: choose another, or Leave out.`;
    else taken.set(field, column);
  });
  const missing = missingColumns(mapping);
  if (missing.length > 0) errors.form = `The file cannot be imported as mapped: it needs ${missing.join(' and ')}.`;
  if (form.consent !== 'yes')
    errors.consent = 'Confirm that the people in this file agreed to be contacted: a lead is only made with consent.';
  return { mapping, errors };
}

const MappingBody = Type.Object(
  { _csrf: Csrf, consent: Checkbox },
  { additionalProperties: Type.String({ maxLength: 60 }) },
);

export function registerLeadImportPages(app: TypedApp, services: AppServices): void {
  app.get('/assets/refresh-progress.js', { config: { console: 'open' } }, async (_request, reply) =>
    reply.type('text/javascript; charset=utf-8').header('cache-control', 'public, max-age=3600').send(REFRESH_SCRIPT),
  );

  app.get(
    '/w/:slug/leads/import',
    { schema: { params: SlugParams }, config: { console: { operation: 'leads.import' } } },
    async (request, reply) => sendPage(reply, await uploadView(services, viewOf(request))),
  );

  // The upload streams its file into staging while the form is parsed: the session, Origin, CSRF (in the action's
  // query) and role checks run before (onRequest), as for a document.
  void app.register(async (scope: TypedApp) => {
    scope.decorateRequest('leadImportUpload', null);
    await scope.register(multipart, {
      attachFieldsToBody: 'keyValues',
      // A file past the limit is cut there and said too large by the handler, in words (not thrown as a 413).
      throwFileSizeLimit: false,
      limits: {
        fileSize: limitsOf(services).maxBytes,
        files: 1,
        fields: 2,
        fieldSize: 1024,
        parts: 3,
        headerPairs: 50,
      },
      async onFile(this: FastifyRequest, part: MultipartFile) {
        if (part.fieldname !== 'file' || this.leadImportUpload) {
          part.file.resume();
          return;
        }
        this.leadImportUpload = await receiveFile(services, this, viewOf(this), part);
        (part as unknown as { value: string }).value = 'received';
      },
    });
    scope.setErrorHandler((error) => {
      throw isUnreadableMultipart(error) ? new ConsoleRefusal(400, UNREADABLE_FORM) : error;
    });
    scope.post(
      '/w/:slug/leads/import',
      {
        schema: {
          params: SlugParams,
          querystring: Type.Object({ _csrf: Csrf }),
          body: Type.Object({ file: Type.Optional(Type.String({ maxLength: 100 })) }),
        },
        config: {
          console: { operation: 'leads.import' },
          onInvalid: async (request) => uploadView(services, viewOf(request), 'Choose a CSV file to upload.'),
        },
      },
      async (request, reply) => {
        const view = viewOf(request);
        const outcome = request.leadImportUpload;
        if (!outcome) return sendPage(reply, await uploadView(services, view, 'Choose a CSV file to upload.'), 400);
        if ('refusal' in outcome)
          return sendPage(
            reply,
            await uploadView(services, view, `Nothing was imported. ${outcome.refusal}`),
            outcome.status,
          );
        return reply.redirect(`${importBase(view)}/${outcome.lead.id}`, 303);
      },
    );
  });

  app.get(
    '/w/:slug/leads/import/:id',
    { schema: { params: IdParams, querystring: ImportQuery }, config: { console: { operation: 'leads.import' } } },
    async (request, reply) => {
      const view = viewOf(request);
      const lead = await leadImportOf(services, view, request.params.id);
      const { show, after, done } = request.query;
      return sendPage(reply, await uploadedPage(services, view, lead, { show, after, message: MESSAGES[done ?? ''] }));
    },
  );

  app.post(
    '/w/:slug/leads/import/:id/mapping',
    {
      schema: { params: IdParams, body: MappingBody },
      config: {
        console: { operation: 'leads.import' },
        onInvalid: async (request, errors) => {
          const view = viewOf(request);
          const lead = await leadImportOf(services, view, partsAsText(request).params.id ?? '');
          return uploadedPage(services, view, lead, { errors: { form: Object.values(errors).join(' ') } });
        },
      },
    },
    async (request, reply) => {
      const view = viewOf(request);
      const lead = await leadImportOf(services, view, request.params.id);
      if (lead.jobId) throw new ConsoleRefusal(409, 'This file is imported already: its mapping cannot change.');
      const { mapping, errors } = mappingOf(lead, request.body as Record<string, unknown>);
      if (Object.keys(errors).length > 0)
        return sendPage(reply, await uploadedPage(services, view, lead, { mapping, errors }), 400);
      const now = services.now();
      await checkImport(services.pool, lead, { mapping, consent: true, now }, rowVerdict(view.workspace, now));
      return reply.redirect(`${importBase(view)}/${lead.id}?done=checked`, 303);
    },
  );

  app.post(
    '/w/:slug/leads/import/:id/start',
    { schema: { params: IdParams, body: formBody({}) }, config: { console: { operation: 'leads.import' } } },
    async (request, reply) => {
      const view = viewOf(request);
      const lead = await leadImportOf(services, view, request.params.id);
      if (!lead.checkedAt) throw new ConsoleRefusal(409, 'Check the rows with a mapping first: nothing was imported.');
      await startImport(services, view, lead);
      return reply.redirect(`${importBase(view)}/${lead.id}/progress`, 303);
    },
  );

  app.get(
    '/w/:slug/leads/import/:id/progress',
    { schema: { params: IdParams }, config: { console: { operation: 'leads.import' } } },
    async (request, reply) => {
      const view = viewOf(request);
      const lead = await leadImportOf(services, view, request.params.id);
      return sendPage(reply, await importProgress(services, view, lead));
    },
  );
}
