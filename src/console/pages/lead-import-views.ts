import { formulaRisk, readBack } from '../../shared/formula-cells.js';
import {
  IMPORT_FIELD_KEYS,
  IMPORT_FIELDS,
  LAYOUT_NAMES,
  missingColumns,
  type ColumnMapping,
} from '../../intake/import/mapping.js';
import {
  type ImportLimits,
  type ImportSummary,
  type LeadImport,
  type PreviewRow,
  type RecentImport,
  type RowFilter,
} from '../../intake/import/store.js';
import type { MemberView } from '../context.js';
import { html, table, type Html } from '../html.js';
import { badge, csrfField, notice, page } from '../layout.js';
import { timeZoneOf, when } from '../time.js';

export const importBase = (view: MemberView) => `/console/w/${view.workspace.slug}/leads/import`;

/** The limits in words, said on the upload page and in the refusals that enforce them. */
export const limitsText = (limits: ImportLimits) =>
  `at most ${bytesText(limits.maxBytes)} and ${limits.maxRows.toLocaleString('en')} rows`;
export const bytesText = (bytes: number) =>
  bytes >= 1024 * 1024 ? `${Math.round(bytes / 1024 / 1024)} MB` : `${bytes.toLocaleString('en')} bytes`;

/** The upload form, its error by the file field, and the workspace's recent uploads. */
export function uploadPage(
  view: MemberView,
  o: { error?: string; recent: RecentImport[]; limits: ImportLimits },
): string {
  const zone = timeZoneOf(view.workspace);
  return page(
    view.frame('Import leads from a CSV file', 'Leads'),
    html`<p>
        Upload a CSV file exported from Pipedrive (people or leads), HubSpot (contacts) or a spreadsheet. Its columns
        are recognised by their headers; you check the mapping and every row before anything is imported. A file is
        ${limitsText(o.limits)}, in UTF-8 (Excel: Save As › CSV UTF-8).
      </p>
      <form method="post" action="${importBase(view)}?_csrf=${view.signedIn.csrf}" enctype="multipart/form-data">
        <div class="field${o.error ? ' invalid' : ''}">
          <label for="f-file">CSV file</label>
          <input
            id="f-file"
            name="file"
            type="file"
            accept=".csv,text/csv"
            required
            ${o.error ? html`aria-invalid="true" aria-describedby="f-file-error"` : ''}
          />
          ${o.error ? html`<p class="error" id="f-file-error" role="alert">${o.error}</p>` : ''}
        </div>
        <button type="submit">Upload and read the file</button>
      </form>
      ${
        o.recent.length > 0
          ? table({
              caption: 'Recent uploads',
              headings: ['File', 'Rows', 'Uploaded', 'State'],
              rows: o.recent.map(
                (r) =>
                  html`<tr>
                    <td><a href="${importBase(view)}/${r.id}">${r.filename || 'file'}</a></td>
                    <td>${r.rowCount.toLocaleString('en')}</td>
                    <td>${when(r.createdAt, zone)}</td>
                    <td>${r.started ? 'Imported (or importing)' : 'Not imported yet'}</td>
                  </tr>`,
              ),
            })
          : ''
      }
      <p><a href="/console/w/${view.workspace.slug}/leads">Back to the leads</a></p>`,
  );
}

/** The mapping form: one select per column of the file, the layout recognised, and the consent the member confirms. */
function mappingForm(
  view: MemberView,
  lead: LeadImport,
  o: { mapping: ColumnMapping; errors: Record<string, string>; example: readonly string[] },
) {
  const options = [['', 'Leave out'] as const, ...IMPORT_FIELD_KEYS.map((k) => [k, IMPORT_FIELDS[k]] as const)];
  const missing = missingColumns(o.mapping);
  return html`<section aria-labelledby="mapping">
    <h2 id="mapping">Columns</h2>
    <p>
      Recognised as ${LAYOUT_NAMES[lead.layout]}: ${lead.headers.length} columns, ${lead.rowCount.toLocaleString('en')}
      rows. Choose what each column gives a lead; columns left out are not imported.
    </p>
    ${o.errors.form ? notice(o.errors.form, 'alert') : ''}
    ${
      missing.length > 0 && lead.checkedAt === null
        ? notice(
            `The file cannot be imported as mapped: it needs ${missing.join(' and ')}. Choose them below.`,
            'alert',
          )
        : ''
    }
    <form method="post" action="${importBase(view)}/${lead.id}/mapping">
      ${csrfField(view.signedIn.csrf)}
      ${table({
        caption: 'What each column of the file gives a lead',
        headings: ['Column of the file', 'Its first row', 'Gives the lead'],
        rows: lead.headers.map((header, column) => {
          const id = `f-col-${column}`;
          const error = o.errors[`col_${column}`];
          return html`<tr>
            <th scope="row"><label for="${id}">${header}</label></th>
            <td>${o.example[column] ?? ''}</td>
            <td class="${error ? 'invalid' : ''}">
              <select
                id="${id}"
                name="col_${column}"
                ${error ? html`aria-invalid="true" aria-describedby="${id}-error"` : ''}
              >
                ${options.map(
                  ([value, label]) =>
                    html`<option value="${value}" ${o.mapping[column] === value ? html`selected` : ''}>
                      ${label}
                    </option>`,
                )}
              </select>
              ${error ? html`<p class="error" id="${id}-error">${error}</p>` : ''}
            </td>
          </tr>`;
        }),
      })}
      <div class="field${o.errors.consent ? ' invalid' : ''}">
        <input
          type="checkbox"
          id="f-consent"
          name="consent"
          value="yes"
          ${lead.consent ? html`checked` : ''}
          ${o.errors.consent ? html`aria-invalid="true" aria-describedby="f-consent-error"` : ''}
        />
        <label for="f-consent" class="inline"
          >The people in this file agreed to be contacted by us (each lead records this consent, source: import)</label
        >
        ${o.errors.consent ? html`<p class="error" id="f-consent-error">${o.errors.consent}</p>` : ''}
      </div>
      <button type="submit">Check the rows with this mapping</button>
    </form>
  </section>`;
}

const FILTERS: readonly [RowFilter, string][] = [
  ['all', 'All rows'],
  ['problems', 'Rows with problems'],
  ['duplicates', 'Duplicates'],
];

/** What a row will do: refused (and why), already imported, joined to a lead its person has, or a new lead. */
function rowVerdict(view: MemberView, row: PreviewRow): Html {
  const leads = `/console/w/${view.workspace.slug}/leads`;
  const problems = Object.entries(row.problems ?? {});
  if (problems.length > 0)
    return html`${badge('Will not be imported', 'bad')}
      <ul class="errors">
        ${problems.map(([field, message]) => html`<li><strong>${fieldName(field)}</strong> ${message}</li>`)}
      </ul>`;
  if (row.importedAs)
    return html`${badge('Imported before', 'info')} from this same file:
      <a href="${leads}/${row.importedAs}">its lead</a>; not imported again`;
  if (row.duplicateOf)
    return html`${badge('Duplicate', 'warn')} this person already has <a href="${leads}/${row.duplicateOf}">a lead</a>;
      the row is added to it as an enquiry`;
  if (row.sameAsRow)
    return html`${badge('Duplicate', 'warn')} same person as row ${row.sameAsRow}; added to that lead as an enquiry`;
  return badge('New lead', 'ok');
}

const fieldName = (field: string) =>
  field === 'row' ? 'The row' : (IMPORT_FIELDS[field as keyof typeof IMPORT_FIELDS] ?? field.replaceAll('_', ' '));

/** One row as it will be imported: its number and line, each mapped value (a formula-looking one said so), its verdict. */
function previewRow(view: MemberView, row: PreviewRow, columns: number[], mapping: ColumnMapping): Html {
  return html`<tr>
    <th scope="row">${row.rowNo} <span class="muted">(line ${row.line})</span></th>
    <td>${rowVerdict(view, row)}</td>
    ${columns.map((column) => {
      const cell = row.cells[column] ?? '';
      return html`<td>
        ${cell}
        ${
          formulaRisk(readBack(cell))
            ? html`<br />${badge('Starts like a formula', 'warn')}
                <span class="muted"
                  >kept as text, never evaluated (${IMPORT_FIELDS[mapping[column] || 'full_name']})</span
                >`
            : ''
        }
      </td>`;
    })}
  </tr>`;
}

export interface PreviewPart {
  summary: ImportSummary;
  rows: PreviewRow[];
  filter: RowFilter;
  /** The row number the next page starts after, if there is one. */
  next: number | null;
}

/** The rows checked: counts, formula cells said, a page of rows with their verdicts, and the button that imports. */
function previewSection(view: MemberView, lead: LeadImport, p: PreviewPart): Html {
  const self = `${importBase(view)}/${lead.id}`;
  const columns = lead.mapping.flatMap((field, column) => (field ? [column] : []));
  const { summary } = p;
  const toImport = summary.ready - Math.min(summary.ready, summary.importedBefore);
  return html`<section aria-labelledby="preview">
    <h2 id="preview">Preview</h2>
    <ul class="summary">
      <li>${summary.rows.toLocaleString('en')} rows read</li>
      <li>${summary.ready.toLocaleString('en')} rows pass the API's checks</li>
      <li>${summary.withProblems.toLocaleString('en')} rows with problems: they will not be imported</li>
      <li>
        ${summary.duplicates.toLocaleString('en')} rows of people who already have a lead (or appear earlier in the
        file): each is added to that lead as an enquiry, never a second lead
      </li>
      ${summary.importedBefore > 0 ? html`<li>${summary.importedBefore.toLocaleString('en')} rows were imported before from this same file: they are not imported again</li>` : ''}
    </ul>
    ${
      lead.formulaRows > 0
        ? notice(
            `${lead.formulaRows.toLocaleString('en')} rows have a cell that starts like a spreadsheet formula (=, +, -, @). Such cells are kept as plain text and never evaluated, here or in an export.`,
          )
        : ''
    }
    <nav aria-label="Which rows">
      <ul class="tabs">
        ${FILTERS.map(
          ([value, label]) =>
            html`<li>
              <a href="${self}?show=${value}" ${p.filter === value ? html`aria-current="page"` : ''}>${label}</a>
            </li>`,
        )}
      </ul>
    </nav>
    ${table({
      caption: `Rows of ${lead.filename || 'the file'} as they will be imported`,
      headings: [
        'Row',
        'What happens',
        ...columns.map((c) => `${lead.headers[c]} → ${IMPORT_FIELDS[lead.mapping[c] || 'full_name']}`),
      ],
      rows: p.rows.map((row) => previewRow(view, row, columns, lead.mapping)),
    })}
    ${p.rows.length === 0 ? html`<p>No row here.</p>` : ''}
    ${p.next !== null ? html`<p><a href="${self}?show=${p.filter}&amp;after=${p.next}">Next rows</a></p>` : ''}
    ${
      lead.jobId
        ? html`<p><a href="${self}/progress">See the import’s progress</a></p>`
        : toImport > 0
          ? html`<form method="post" action="${self}/start">
              ${csrfField(view.signedIn.csrf)}
              <p>
                Importing creates up to ${toImport.toLocaleString('en')} leads (duplicates become enquiries on the leads
                their people have), each with you as its creator and the source Import. This cannot be undone from here.
              </p>
              <button type="submit">Import ${toImport.toLocaleString('en')} rows</button>
            </form>`
          : html`<p>No row can be imported as the file stands.</p>`
    }
  </section>`;
}

/** The page of one upload: its mapping form and, once checked, the preview and the import button. */
export function importPage(
  view: MemberView,
  lead: LeadImport,
  o: {
    mapping?: ColumnMapping;
    errors?: Record<string, string>;
    message?: string;
    preview?: PreviewPart;
    example: readonly string[];
  },
): string {
  return page(
    view.frame(`Import ${lead.filename || 'a CSV file'}`, 'Leads'),
    html`${notice(o.message)}
      ${mappingForm(view, lead, { mapping: o.mapping ?? lead.mapping, errors: o.errors ?? {}, example: o.example })}
      ${o.preview ? previewSection(view, lead, o.preview) : ''}
      <p><a href="${importBase(view)}">Upload another file</a></p>`,
  );
}

export interface ProgressPart {
  state: string;
  total: number;
  done: number;
  refused: number;
  skipped: number;
  pending: number;
  /** Rows the preview found problems with: never made items. */
  leftOut: number;
  refusals: { row: string; reason: string | null }[];
}

const STATE_WORDS: Record<string, string> = {
  queued: 'Waiting to start',
  running: 'Importing',
  done: 'Finished',
  failed: 'Stopped with an error',
  cancelled: 'Cancelled',
  not_started: 'Not started: check the rows and press Import on the file’s page',
};

/** The import's progress, read from its rows' outcomes; refreshed by a small script while it runs. */
export function progressPage(view: MemberView, lead: LeadImport, p: ProgressPart): string {
  const self = `${importBase(view)}/${lead.id}/progress`;
  const finished = p.total - p.pending;
  const running = p.state === 'queued' || p.state === 'running';
  return page(
    view.frame(`Importing ${lead.filename || 'a CSV file'}`, 'Leads'),
    html`<section aria-labelledby="state" ${running ? html`data-refresh="3"` : ''}>
        <h2 id="state">${STATE_WORDS[p.state] ?? p.state}</h2>
        <p>
          <label for="import-progress"
            >${finished.toLocaleString('en')} of ${p.total.toLocaleString('en')} rows done</label
          >
          <progress id="import-progress" max="${p.total}" value="${finished}">${finished} of ${p.total}</progress>
        </p>
        <div role="status">
          <ul class="summary">
            <li>${p.done.toLocaleString('en')} imported (new leads, or enquiries on the leads their people have)</li>
            <li>${p.skipped.toLocaleString('en')} skipped: imported before from this same file</li>
            <li>${p.refused.toLocaleString('en')} refused</li>
            <li>${p.pending.toLocaleString('en')} still to do</li>
            ${p.leftOut > 0 ? html`<li>${p.leftOut.toLocaleString('en')} rows with problems were left out (see <a href="${importBase(view)}/${lead.id}?show=problems">the preview</a>)</li>` : ''}
          </ul>
        </div>
        ${running ? html`<p><a href="${self}">Check again</a> (this page also refreshes itself while the import runs)</p>` : ''}
      </section>
      ${
        p.refusals.length > 0
          ? table({
              caption: 'Rows refused, and why',
              headings: ['Row', 'Why'],
              rows: p.refusals.map(
                (r) =>
                  html`<tr>
                    <td>${r.row}</td>
                    <td>${r.reason ?? ''}</td>
                  </tr>`,
              ),
            })
          : ''
      }
      <p>
        <a href="/console/w/${view.workspace.slug}/leads">Back to the leads</a> ·
        <a href="${importBase(view)}">Import another file</a>
      </p>
      <script src="/console/assets/refresh-progress.js" defer></script>`,
  );
}

/** Reloads a page with a `data-refresh` section every that many seconds, keeping the focus where the reader left it. */
export const REFRESH_SCRIPT = `(() => {
  const section = document.querySelector('[data-refresh]');
  if (!section) return;
  const seconds = Number(section.getAttribute('data-refresh')) || 3;
  setTimeout(() => location.reload(), seconds * 1000);
})();
`;
