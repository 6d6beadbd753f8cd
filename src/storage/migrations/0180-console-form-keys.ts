export const name = 'the console’s one-time form keys beside the API’s Idempotency-Keys';

// The console's new-lead form sends its capture with a one-time key made when the form is shown, so a second submit
// of the same form replays the first answer instead of making a second lead. Those keys are kept under their own
// kind, so no key an integration sends (secret or public) can ever meet one.
export const sql = `
ALTER TABLE lead_idempotency DROP CONSTRAINT lead_idempotency_key_kind,
  ADD CONSTRAINT lead_idempotency_key_kind CHECK (key_kind IN ('secret', 'public', 'console'));
`;
