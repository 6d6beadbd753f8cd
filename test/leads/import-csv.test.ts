import { Readable } from 'node:stream';
import { stringify } from 'csv-stringify/sync';
import fc from 'fast-check';
import t from 'tap';
import { formulaRisk, readBack } from '../../src/shared/formula-cells.js';
import { leadBodyOf, proposeMapping, recogniseLayout } from '../../src/intake/import/mapping.js';
import { readCsv, type CsvRecord } from '../../src/intake/import/read-csv.js';
import { checkProperty } from '../support/properties.js';

async function readAll(chunks: Uint8Array[]): Promise<CsvRecord[]> {
  const csv = readCsv(Readable.from(chunks.map((c) => Buffer.from(c))));
  const records: CsvRecord[] = [];
  for await (const record of csv.records) records.push(record);
  return records;
}

/** The bytes cut at the given points (each taken modulo the length), as a network delivers them. */
function cut(bytes: Uint8Array, points: number[]): Uint8Array[] {
  const at = [...new Set(points.map((p) => p % (bytes.length + 1)))].sort((a, b) => a - b);
  const chunks: Uint8Array[] = [];
  let start = 0;
  for (const p of [...at, bytes.length]) {
    if (p > start) chunks.push(bytes.subarray(start, p));
    start = Math.max(start, p);
  }
  return chunks;
}

t.test('headers as Pipedrive, HubSpot and spreadsheets write them', async (t) => {
  const pipedrive = ['Person - Name', 'Person - Phone - Work', 'Person - Phone - Mobile', 'Person - Email - Work'];
  t.equal(recogniseLayout(pipedrive), 'pipedrive');
  t.same(proposeMapping(pipedrive, 'pipedrive'), ['full_name', 'phone', 'phone', 'email']);
  const pipedriveLeads = ['Lead - Title', 'Lead - Source', 'Person - Name', 'Person - Phone', 'Person - Email'];
  t.equal(recogniseLayout(pipedriveLeads), 'pipedrive');
  t.same(proposeMapping(pipedriveLeads, 'pipedrive'), ['', '', 'full_name', 'phone', 'email']);
  const olderPipedrive = ['Name', 'Phone - Work', 'Email - Work', 'Organization'];
  t.equal(recogniseLayout(olderPipedrive), 'pipedrive', 'older exports without the Person - prefix');
  t.same(proposeMapping(olderPipedrive, 'pipedrive'), ['full_name', 'phone', 'email', '']);
  const hubspot = ['Record ID', 'First Name', 'Last Name', 'Email', 'Phone Number', 'Mobile Phone Number'];
  t.equal(recogniseLayout(hubspot), 'hubspot');
  t.same(proposeMapping(hubspot, 'hubspot'), ['', 'first_name', 'last_name', 'email', 'phone', 'phone']);
  const sheet = ['Full name', 'Mobile', 'E-mail', 'Destination', 'DOB', 'Comments', 'Anything else'];
  t.equal(recogniseLayout(sheet), 'spreadsheet');
  t.same(proposeMapping(sheet, 'spreadsheet'), [
    'full_name',
    'phone',
    'email',
    'country_interest',
    'date_of_birth',
    'message',
    '',
  ]);
  t.same(
    leadBodyOf(['Asha', '', '+91 98000 00001', '+91 98000 00002'], ['full_name', 'phone', 'phone', 'phone'], true),
    { full_name: 'Asha', phone: '+91 98000 00001', alt_phone: '+91 98000 00002', consent: true },
    'the first filled phone, then the other phone',
  );
  t.same(leadBodyOf(['Singh', 'Karan'], ['last_name', 'first_name'], true), {
    full_name: 'Karan Singh',
    consent: true,
  });
});

t.test('a cell that would start a formula in a spreadsheet, and one that is a phone', async (t) => {
  for (const cell of ['=1+2', '@SUM(A1)', '+cmd|x', '-2+3*A1', '\tx', '\r=1', "=cmd|' /C calc'!A0"])
    t.ok(formulaRisk(cell), JSON.stringify(cell));
  for (const cell of ['+91 98765 43210', '-3.5', '+1 (555) 010-0000', 'Asha', '', '12-03-2001'])
    t.notOk(formulaRisk(cell), JSON.stringify(cell));
});

t.test('records keep the line they start on: quoted line breaks, CRLF, empty lines', async (t) => {
  const records = await readAll([Buffer.from('a,b\r\n"x\r\ny",1\r\n\r\nq,2\r\nr,"3\n4\r5"\nlast,9')]);
  t.same(
    records.map((r) => r.line),
    [1, 2, 5, 6, 9],
  );
});

const CELL_UNITS = ['a', 'Z', '0', ' ', ',', '"', '\n', '\r\n', 'é', 'ß', '漢', '😀', '=', '+', ';', '\t', "'"];
const cell = fc.string({ unit: fc.constantFrom(...CELL_UNITS), maxLength: 12 });
const HEADERS = ['Name', 'Phone', 'Email', 'City', 'Notes'];

t.test(
  'property: any table written as CSV (quotes, commas, newlines in cells, BOM, CRLF, any chunking) reads and maps back to its values',
  async (t) => {
    await checkProperty(
      t,
      'csv round trip',
      fc.asyncProperty(
        fc.array(fc.tuple(cell, cell, cell, cell, cell), { minLength: 1, maxLength: 20 }),
        fc.boolean(),
        fc.boolean(),
        fc.boolean(),
        fc.array(fc.nat(), { maxLength: 8 }),
        async (rows, bom, crlf, quoted, points) => {
          // Every spreadsheet quotes a cell holding a line break of either kind (csv-stringify, left alone, quotes only
          // the record delimiter's own); some quote every cell.
          const text = stringify([HEADERS, ...rows], {
            bom,
            record_delimiter: crlf ? 'windows' : 'unix',
            quoted,
            quoted_match: /[\r\n]/,
          });
          const records = await readAll(cut(Buffer.from(text, 'utf8'), points));
          const [header, ...data] = records;
          if (JSON.stringify(header?.cells) !== JSON.stringify(HEADERS)) return false;
          const mapping = proposeMapping(header!.cells, recogniseLayout(header!.cells));
          if (data.length !== rows.length) return false;
          return rows.every((row, i) => {
            const body = leadBodyOf(data[i]!.cells, mapping, true);
            // A cell an export neutralised (an apostrophe before a formula risk) reads back without the apostrophe.
            const [name, phone, email, city, notes] = row.map((v) => readBack(v.trim()));
            const expected: Record<string, unknown> = { full_name: name };
            if (phone) expected.phone = phone;
            if (email) expected.email = email;
            if (city) expected.city = city;
            if (notes) expected.message = notes;
            expected.consent = true;
            return JSON.stringify(body) === JSON.stringify(expected);
          });
        },
      ),
      300,
      // 2026-11-29: a cell `'\r\na` read back as `\r\na`, which the property did not expect (the export's rule).
      [350431993],
    );
  },
);

t.test('a large file read slowly leaves no waiting listener behind on the parser', async (t) => {
  const warnings: string[] = [];
  const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
  process.on('warning', onWarning);
  t.teardown(() => void process.off('warning', onWarning));
  // Many chunks, a consumer slower than the parser: the feeding loop waits for the parser to drain again and again.
  const line = 'Person,+91 98765 43210,person@example.com,Pune,' + 'x'.repeat(200) + '\r\n';
  const chunks = Array.from({ length: 400 }, () => Buffer.from(line.repeat(40)));
  const csv = readCsv(Readable.from(chunks));
  let records = 0;
  for await (const record of csv.records) {
    records += record.cells.length > 0 ? 1 : 0;
    if (records % 500 === 0) await new Promise((r) => setImmediate(r));
  }
  await new Promise((r) => setImmediate(r));
  t.equal(records, 16_000);
  t.same(
    warnings.filter((w) => w.startsWith('MaxListenersExceededWarning')),
    [],
  );
});
