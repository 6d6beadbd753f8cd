import {
  decide,
  evolve,
  fold,
  decideIssue,
  type Invoice,
  type InvoiceCommand,
  type InvoiceEvent,
  type IssueInvoiceInput,
} from '../../domain/invoices/index.js';
import type { EventStore } from '../../events/event-store.js';
import type { CommandContext } from '../../events/types.js';
import { invoiceStream, toInvoiceEvent } from '../../domain/invoices/index.js';
import { commandHandler, type Handled } from '../command-handler.js';
import { newId } from '../../shared/ids.js';
import type { Queryable } from '../../storage/postgres.js';
import { runCommand } from '../run-command.js';
import { personOfSubject } from '../person-locks.js';
import type { Subject } from '../subject.js';

/**
 * The next invoice number of a workspace in one mode (live and sandbox count separately). The counter row stays locked
 * until the issuing transaction ends, so concurrent issues take turns and a rolled-back one gives its number back.
 */
async function nextInvoiceNumber(sql: Queryable, tenantId: string, sandbox: boolean): Promise<number> {
  const result = await sql.query<{ last_number: number }>(
    `INSERT INTO invoice_numbers (tenant_id, sandbox, last_number) VALUES ($1, $2, 1)
     ON CONFLICT (tenant_id, sandbox) DO UPDATE SET last_number = invoice_numbers.last_number + 1
     RETURNING last_number`,
    [tenantId, sandbox],
  );
  return result.rows[0]!.last_number;
}

export type NewInvoice = Omit<IssueInvoiceInput, 'invoice_id' | 'number' | 'subject' | 'now' | 'person_id'> & {
  subject: Subject;
};

/** Issues an invoice for a lead or an application: the next number, then invoice.issued, in one transaction. */
export async function issueInvoice(store: EventStore, context: CommandContext, input: NewInvoice): Promise<Invoice> {
  const id = newId(context.now.getTime());
  const stream = invoiceStream(id);
  return runCommand(store, context, [stream], async (tx) => {
    const person_id = await personOfSubject(tx, input.subject);
    // Validate before taking a number, so a refused invoice never holds the counter row longer than it must.
    decideIssue({ ...input, invoice_id: id, number: 1, now: tx.context.now, person_id });
    const number = await nextInvoiceNumber(tx.sql, tx.context.tenantId, tx.context.sandbox);
    const events = decideIssue({ ...input, invoice_id: id, number, now: tx.context.now, person_id });
    await tx.append(stream, 'no_stream', events);
    return fold(events)!;
  });
}

const invoices = commandHandler<Invoice, InvoiceEvent, InvoiceCommand>({
  name: 'invoice',
  stream: invoiceStream,
  read: toInvoiceEvent,
  evolve,
  decide,
});

/** Reads and folds an invoice's stream inside the transaction; not found when unknown, another tenant's or mode's. */
export const loadInvoice = invoices.load;

export type InvoiceResult = Handled<Invoice, InvoiceEvent>;

/** Runs one command on an invoice (a payment, a refund, a refund paid): load, decide, append. */
export const handleInvoiceCommand = invoices.handle;
