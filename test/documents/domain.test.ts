import fc from 'fast-check';
import t from 'tap';
import {
  cleanFilename,
  decide,
  DEFAULT_DOCUMENT_TYPES,
  DOCUMENT_CONTENT_TYPES,
  DocumentRefusal,
  evolve,
  fold,
  decideReceive,
  type Document,
  type DocumentCommand,
  type DocumentEvent,
  type DocumentTypeDef,
} from '../../src/domain/documents/index.js';
import { detectContentType } from '../../src/documents/sniff.js';
import { deciderSpec, onExisting } from '../support/decider-spec.js';
import { checkProperty } from '../support/properties.js';
import { pdfFile, PNG_FILE } from '../support/clamd.js';

const LEAD = '0190a000-0000-7000-8000-00000000000a';
const NOW = new Date('2026-11-24T10:00:00.000Z');
const TYPES: DocumentTypeDef[] = [
  { key: 'passport', name: 'Passport', max_size_bytes: 1_000, content_types: ['application/pdf'] },
  { key: 'photo', name: 'Photo', max_size_bytes: 500, content_types: ['image/jpeg', 'image/png'] },
];

const received = (overrides: Partial<Omit<Parameters<typeof decideReceive>[0], 'person_id'>> = {}) =>
  decideReceive({
    document_id: '0190a000-0000-7000-8000-0000000000d1',
    subject: { lead_id: LEAD, application_id: null },
    types: TYPES,
    document_type: 'passport',
    filename: 'passport.pdf',
    declared_content_type: 'application/pdf',
    detected_content_type: 'application/pdf',
    size: 100,
    checksum_sha256: 'ab'.repeat(32),
    now: NOW,
    person_id: LEAD,
    ...overrides,
  });

t.test('a received file is accepted exactly when its type, size and content type are allowed', async (t) => {
  await checkProperty(
    t,
    'decideReceive',
    fc.property(
      fc.constantFrom('passport', 'photo', 'visa'),
      fc.integer({ min: 0, max: 1_200 }),
      fc.option(fc.constantFrom(...DOCUMENT_CONTENT_TYPES), { nil: null }),
      fc.option(fc.constantFrom(...DOCUMENT_CONTENT_TYPES, 'text/plain', 'application/pdf; charset=binary'), {
        nil: null,
      }),
      (key, size, detected, declared) => {
        const type = TYPES.find((d) => d.key === key);
        const declaredType = declared?.split(';')[0] ?? null;
        const expected =
          type === undefined
            ? 'validation_failed'
            : size === 0
              ? 'validation_failed'
              : size > type.max_size_bytes
                ? 'document_too_large'
                : detected === null ||
                    !type.content_types.includes(detected) ||
                    (declaredType !== null && declaredType !== detected)
                  ? 'unsupported_content_type'
                  : 'accepted';
        let outcome: string;
        try {
          const events = received({
            document_type: key,
            size,
            detected_content_type: detected,
            declared_content_type: declared,
          });
          outcome = 'accepted';
          if (events[0]!.type !== 'document.received' || events[0]!.data.content_type !== detected)
            throw new Error('the content type kept is not the detected one');
        } catch (error) {
          if (!(error instanceof DocumentRefusal)) throw error;
          outcome = error.code;
        }
        return outcome === expected;
      },
    ),
    500,
  );
});

const commands: fc.Arbitrary<DocumentCommand[]> = fc.array(
  fc.oneof(
    fc.constant<DocumentCommand>({ type: 'record_scan', result: { kind: 'clean' }, now: NOW }),
    fc.constantFrom('Eicar', 'X.Y').map<DocumentCommand>((signature) => ({
      type: 'record_scan',
      result: { kind: 'infected', signature },
      now: NOW,
    })),
    fc.string({ minLength: 0, maxLength: 20 }).map<DocumentCommand>((reason) => ({ type: 'reject', reason, now: NOW })),
    fc.constant<DocumentCommand>({ type: 'set_aside', reason: 'clamd answered ERROR', attempts: 3, now: NOW }),
  ),
  { maxLength: 12 },
);

t.test('any sequence of scans, set-asides and rejections keeps the document consistent', async (t) => {
  await checkProperty(
    t,
    'decide/evolve',
    fc.property(commands, (sequence) => {
      const history: DocumentEvent[] = [...received()];
      let state: Document = fold(history)!;
      for (const command of sequence) {
        let events: DocumentEvent[];
        try {
          events = decide(state, command);
        } catch (error) {
          if (!(error instanceof DocumentRefusal)) throw error;
          // Refused: a blank reason, or rejecting what is not available.
          if (command.type !== 'reject') throw error;
          if (command.reason.trim() !== '' && state.status === 'available') throw error;
          continue;
        }
        for (const event of events) {
          state = evolve(state, event);
          // A webhook event's payload is the document as it is after the event.
          if ('payload' in event.data && JSON.stringify(event.data.payload) !== JSON.stringify(state))
            throw new Error(`${event.type}'s payload is not the state after it`);
        }
        history.push(...events);
      }
      // Setting a document aside ends its scan as a verdict does: at most one of them, ever.
      const verdicts = history.filter((e) =>
        ['document.uploaded', 'document.infected', 'document.scan_failed'].includes(e.type),
      );
      if (verdicts.length > 1) throw new Error('more than one scan verdict');
      const rejections = history.filter((e) => e.type === 'document.rejected');
      if (rejections.length > 1) throw new Error('rejected twice');
      if (rejections.length === 1 && verdicts[0]?.type !== 'document.uploaded')
        throw new Error('rejected without passing the scan');
      if (JSON.stringify(fold(history)) !== JSON.stringify(state)) throw new Error('replay differs');
      return true;
    }),
    500,
  );
});

t.test('file names keep their last segment without control characters', async (t) => {
  t.equal(cleanFilename('C:\\scans\\passport.pdf'), 'passport.pdf');
  t.equal(cleanFilename('../../etc/passwd'), 'passwd');
  t.equal(cleanFilename('a\u0000b\nc.pdf'), 'abc.pdf');
  t.equal(cleanFilename('證件 😀.pdf'), '證件 😀.pdf');
  t.equal([...cleanFilename('😀'.repeat(300))].length, 255, '255 characters, never half a surrogate pair');
  for (const bad of ['', '  ', '..', 'dir/', '\u0001'])
    t.throws(() => cleanFilename(bad), { code: 'validation_failed' }, JSON.stringify(bad));
});

t.test('content types come from the first bytes only', async (t) => {
  t.equal(detectContentType(pdfFile()), 'application/pdf');
  t.equal(detectContentType(PNG_FILE), 'image/png');
  t.equal(detectContentType(Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0x10])), 'image/jpeg');
  t.equal(detectContentType(Buffer.from(' %PDF-1.4')), null, 'not at the start');
  t.equal(detectContentType(Buffer.from('%PD')), null, 'too short');
  t.equal(detectContentType(Buffer.alloc(0)), null);
  t.ok(
    DEFAULT_DOCUMENT_TYPES.some((d) => d.key === 'passport'),
    'passport is a default type',
  );
});

const spec = deciderSpec<Document | undefined, DocumentCommand, DocumentEvent>({
  decide: onExisting(decide),
  evolve,
  initialState: () => undefined,
});
const LATER = new Date(NOW.getTime() + 60_000);

t.test('given/when/then: a scan is recorded once, only an available document is rejected, once', async (t) => {
  const clean: DocumentCommand = { type: 'record_scan', result: { kind: 'clean' }, now: LATER };
  spec(t)
    .given(received())
    .when(clean)
    .thenMatches([
      { type: 'document.uploaded', data: { scanned_at: LATER.toISOString(), payload: { status: 'available' } } },
    ]);
  const uploaded = [...received(), ...spec.after(received()).when(clean)];
  spec(t).given(uploaded).when(clean).thenNothing('a second verdict appends nothing');
  spec(t)
    .given(received())
    .when({ type: 'record_scan', result: { kind: 'infected', signature: 'Eicar' }, now: LATER })
    .then([{ type: 'document.infected', data: { scanned_at: LATER.toISOString(), signature: 'Eicar' } }]);
  spec(t)
    .given(received())
    .when({ type: 'reject', reason: 'Blurred', now: LATER })
    .thenThrows({ code: 'document_not_available' }, 'still waiting for its scan');
  spec(t).given(uploaded).when({ type: 'reject', reason: '  ', now: LATER }).thenThrows({ code: 'validation_failed' });
  const reject: DocumentCommand = { type: 'reject', reason: ' Blurred ', now: LATER };
  spec(t)
    .given(uploaded)
    .when(reject)
    .thenMatches([{ type: 'document.rejected', data: { reason: 'Blurred', payload: { status: 'rejected' } } }]);
  const rejected = [...uploaded, ...spec.after(uploaded).when(reject)];
  spec(t).given(rejected).when(reject).thenNothing('rejecting twice appends nothing');
});
