export const name = 'owner mail outbox';

// webhook_notifications becomes an outbox the owner mailer works through (src/subscribers/owner-mailer.ts): a row is
// written in the transaction that pauses the endpoint, claimed with a lease (claim_id, lease_until) by one mailer at a
// time, and marked sent by the claim that sent it. Rows written before this migration were never sent and are kept
// as the record of a notice that could not be emailed (there was no mailer then).
export const sql = `
ALTER TABLE webhook_notifications
  ADD COLUMN status text NOT NULL DEFAULT 'pending'
    CHECK (status IN ('pending', 'sent', 'not_sent_no_smtp', 'obsolete', 'failed')),
  ADD COLUMN attempts integer NOT NULL DEFAULT 0,
  ADD COLUMN next_attempt_at timestamptz NOT NULL DEFAULT now(),
  ADD COLUMN claim_id uuid,
  ADD COLUMN lease_until timestamptz,
  ADD COLUMN last_error text;
UPDATE webhook_notifications SET status = CASE WHEN sent_at IS NULL THEN 'not_sent_no_smtp' ELSE 'sent' END;
CREATE INDEX webhook_notifications_due ON webhook_notifications (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_notifications_endpoint ON webhook_notifications (endpoint_id) WHERE status = 'pending';
`;
